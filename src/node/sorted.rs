//! Sorted map and set backed by one `Vec`, for the boot path: std's
//! `BTreeMap`/`BTreeSet` cost the static wrapper ~25 KB of code for the
//! handful of key/value types it uses, where these are a binary search and
//! a `Vec` insert per call. The maps at boot hold tens to a few hundred
//! entries, built mostly in ascending order, so the O(n) insert is cheap;
//! a build from many (`collect`, `extend`) is O(n log n) in any order
//! (feature files a pod writes may list thousands of keys descending).
//! Iteration is in ascending `Ord` order, as with `BTreeMap`, so output
//! built from either is the same.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;

// Entries moved by inserts and removals (each shifts the tail of the Vec)
// and by bulk builds, counted in tests: the work a build does, measured
// without a clock.
#[cfg(test)]
thread_local! {
    static MOVED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Entries moved on this thread so far (tests only).
#[cfg(test)]
pub(crate) fn moves() -> usize {
    MOVED.with(|m| m.get())
}

/// Count `n` entries moved (tests only).
#[inline(always)]
fn moved(_n: usize) {
    #[cfg(test)]
    MOVED.with(|m| m.set(m.get() + _n));
}

// Keys compared by `Runs::get`, counted in tests as `MOVED` is.
#[cfg(test)]
thread_local! {
    static PROBED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Keys compared by lookups in [`Runs`] on this thread so far (tests only).
#[cfg(test)]
pub(crate) fn probes() -> usize {
    PROBED.with(|m| m.get())
}

#[inline(always)]
fn probed() {
    #[cfg(test)]
    PROBED.with(|m| m.set(m.get() + 1));
}

/// A map kept sorted by key; the subset of `BTreeMap`'s API the code uses,
/// with the same results.
#[derive(Clone, PartialEq, Eq)]
pub struct SortedMap<K, V> {
    entries: Vec<(K, V)>,
}

impl<K, V> SortedMap<K, V> {
    pub const fn new() -> Self {
        SortedMap {
            entries: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries in ascending key order.
    pub fn iter(&self) -> Iter<'_, K, V> {
        Iter(self.entries.iter())
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &K> + ExactSizeIterator {
        self.entries.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + ExactSizeIterator {
        self.entries.iter().map(|(_, v)| v)
    }

    /// The values in ascending key order.
    pub fn into_values(self) -> impl DoubleEndedIterator<Item = V> + ExactSizeIterator {
        self.entries.into_iter().map(|(_, v)| v)
    }

    /// The entries in ascending key order, as a slice.
    pub fn as_slice(&self) -> &[(K, V)] {
        &self.entries
    }
}

impl<K: Ord, V> SortedMap<K, V> {
    /// `Ok(index)` of `key`, or `Err(index)` where it would go.
    fn find<Q>(&self, key: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.entries.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    /// As `BTreeMap::insert`: the old value when the key was there (the
    /// key itself is kept, not replaced).
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        // Most maps here are built in key order: then one comparison.
        let at = match self.entries.last() {
            Some((last, _)) if *last < key => Err(self.entries.len()),
            _ => self.find(&key),
        };
        match at {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                moved(self.entries.len() - i);
                self.entries.insert(i, (key, value));
                None
            }
        }
    }

    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).ok().map(|i| &self.entries[i].1)
    }

    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).ok().map(|i| &mut self.entries[i].1)
    }

    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).is_ok()
    }

    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).ok().map(|i| self.entries.remove(i).1)
    }

    /// The slot for `key`, to fill when empty (`or_default`, `or_insert`).
    pub fn entry(&mut self, key: K) -> Entry<'_, K, V> {
        let at = self.find(&key);
        Entry { map: self, key, at }
    }
}

/// A key's slot in a `SortedMap`, from `SortedMap::entry`.
pub struct Entry<'a, K, V> {
    map: &'a mut SortedMap<K, V>,
    key: K,
    at: Result<usize, usize>,
}

impl<'a, K, V> Entry<'a, K, V> {
    pub fn or_insert_with(self, value: impl FnOnce() -> V) -> &'a mut V {
        let i = match self.at {
            Ok(i) => i,
            Err(i) => {
                moved(self.map.entries.len() - i);
                self.map.entries.insert(i, (self.key, value()));
                i
            }
        };
        &mut self.map.entries[i].1
    }

    pub fn or_insert(self, value: V) -> &'a mut V {
        self.or_insert_with(|| value)
    }

    pub fn or_default(self) -> &'a mut V
    where
        V: Default,
    {
        self.or_insert_with(V::default)
    }
}

impl<K, V> Default for SortedMap<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

/// As `BTreeMap`'s: panics when the key is absent.
impl<K: Ord + Borrow<Q>, Q: Ord + ?Sized, V> std::ops::Index<&Q> for SortedMap<K, V> {
    type Output = V;

    fn index(&self, key: &Q) -> &V {
        self.get(key).expect("key in SortedMap")
    }
}

/// Formats as `BTreeMap` does (`{k: v, ...}`).
impl<K: fmt::Debug, V: fmt::Debug> fmt::Debug for SortedMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Later pairs win on a key, as in `BTreeMap`.
impl<K: Ord, V> FromIterator<(K, V)> for SortedMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut map = Self::new();
        map.extend(iter);
        map
    }
}

/// In O(n log n) whatever the order (see [`settle`]); later pairs win on a
/// key, as with `BTreeMap::insert`.
impl<K: Ord, V> Extend<(K, V)> for SortedMap<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        let sorted = self.entries.len();
        self.entries.extend(iter);
        settle(&mut self.entries, sorted, |a, b| a.0.cmp(&b.0), true);
    }
}

/// Make `items` ascending without repeats, given `items[..sorted]` is and
/// the rest is in any order; of the items equal to one another the first
/// is kept, or the last with `last` (`BTreeMap::insert` replaces a value,
/// `BTreeSet::insert` keeps the item). One comparison an item when the new
/// ones come ascending after the old (most builds here), else one sort of
/// the whole: O(n log n) where an insert each is O(n²) (keys descending).
/// The comparisons and the sort are in [`kept_order`], one copy for every
/// item type; this part only moves the items.
fn settle<T>(items: &mut Vec<T>, sorted: usize, cmp: fn(&T, &T) -> Ordering, last: bool) {
    let Some(keep) = kept_order(items.len(), sorted, &|a, b| cmp(&items[a], &items[b]), last)
    else {
        return;
    };
    moved(items.len());
    let mut slots: Vec<Option<T>> = std::mem::take(items).into_iter().map(Some).collect();
    items.extend(keep.into_iter().filter_map(|i| slots.get_mut(i)?.take()));
}

/// The positions of `0..n` to keep, in the order that sorts them by `cmp`,
/// one of each run of equal ones (the first, or the last with `last`);
/// None when `sorted..n` already come ascending after the first `sorted`.
#[inline(never)]
fn kept_order(
    n: usize,
    sorted: usize,
    cmp: &dyn Fn(usize, usize) -> Ordering,
    last: bool,
) -> Option<Vec<usize>> {
    if (sorted.max(1)..n).all(|i| cmp(i - 1, i) == Ordering::Less) {
        return None;
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_unstable_by(|&a, &b| cmp(a, b).then(a.cmp(&b)));
    let mut keep: Vec<usize> = Vec::with_capacity(n);
    for i in order {
        match keep.last_mut() {
            Some(k) if cmp(*k, i) == Ordering::Equal => {
                if last {
                    *k = i;
                }
            }
            _ => keep.push(i),
        }
    }
    Some(keep)
}

impl<K: Ord, V, const N: usize> From<[(K, V); N]> for SortedMap<K, V> {
    fn from(pairs: [(K, V); N]) -> Self {
        pairs.into_iter().collect()
    }
}

/// As a JSON object in key order, as `BTreeMap` serializes (CLI and tests
/// only: the wrapper has no serde).
#[cfg(feature = "cli")]
impl<K: serde::Serialize, V: serde::Serialize> serde::Serialize for SortedMap<K, V> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

/// Entries of a `SortedMap` by reference, in key order.
pub struct Iter<'a, K, V>(std::slice::Iter<'a, (K, V)>);

impl<'a, K, V> Iterator for Iter<'a, K, V> {
    type Item = (&'a K, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (k, v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl<K, V> DoubleEndedIterator for Iter<'_, K, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|(k, v)| (k, v))
    }
}

impl<K, V> ExactSizeIterator for Iter<'_, K, V> {}

impl<'a, K, V> IntoIterator for &'a SortedMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = Iter<'a, K, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<K, V> IntoIterator for SortedMap<K, V> {
    type Item = (K, V);
    type IntoIter = std::vec::IntoIter<(K, V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

/// A map fed one entry at a time from input, in any order: `insert` is
/// O(log n) amortized and `get` O(log² n), where [`SortedMap::insert`]
/// moves every later entry for a key out of order (190,000 YAML anchors
/// named descending took the wrapper minutes: review 19 F1). Sorted runs,
/// oldest first, merged as a binary counter (Bentley and Saxe): the k-th
/// run from the newest holds the entries of 2^k inserts when bit k of the
/// count of inserts is set, so there are at most log2(n) + 1 runs and an
/// entry is moved at most log2(n) times. A later insert of a key wins, as
/// with `BTreeMap::insert`; the older entry is dropped when their runs
/// merge.
pub struct Runs<K, V> {
    runs: Vec<Vec<(K, V)>>,
    inserts: usize,
}

impl<K: Ord, V> Runs<K, V> {
    pub const fn new() -> Self {
        Runs {
            runs: Vec::new(),
            inserts: 0,
        }
    }

    pub fn insert(&mut self, key: K, value: V) {
        let mut run = vec![(key, value)];
        let mut bit = 1;
        // the carries: runs of 1, 2, 4... inserts, merged into this one
        while self.inserts & bit != 0 {
            let Some(older) = self.runs.pop() else { break };
            run = merge_runs(older, run);
            bit <<= 1;
        }
        self.inserts += 1;
        self.runs.push(run);
    }

    /// The value of the latest insert of `key`.
    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.runs.iter().rev().find_map(|run| {
            let at = run.binary_search_by(|(k, _)| {
                probed();
                k.borrow().cmp(key)
            });
            at.ok().map(|i| &run[i].1)
        })
    }

    /// Every key once, with the value of its latest insert, in key order.
    pub fn into_sorted(self) -> Vec<(K, V)> {
        self.runs.into_iter().reduce(merge_runs).unwrap_or_default()
    }
}

impl<K: Ord, V> Default for Runs<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

/// Two runs as one, in key order; of a key in both, the newer's entry.
fn merge_runs<K: Ord, V>(older: Vec<(K, V)>, newer: Vec<(K, V)>) -> Vec<(K, V)> {
    moved(older.len() + newer.len());
    let mut out = Vec::with_capacity(older.len() + newer.len());
    let mut old = older.into_iter().peekable();
    for (k, v) in newer {
        while let Some(o) = old.next_if(|o| o.0 <= k) {
            if o.0 < k {
                out.push(o);
            }
        }
        out.push((k, v));
    }
    out.extend(old);
    out
}

/// A set kept sorted; the subset of `BTreeSet`'s API the code uses, with
/// the same results.
#[derive(Clone, PartialEq, Eq)]
pub struct SortedSet<T> {
    items: Vec<T>,
}

impl<T> SortedSet<T> {
    pub const fn new() -> Self {
        SortedSet { items: Vec::new() }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Items in ascending order.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.items.iter()
    }

    /// The items in ascending order, as a slice.
    pub fn as_slice(&self) -> &[T] {
        &self.items
    }
}

impl<T: Ord> SortedSet<T> {
    fn find<Q>(&self, item: &Q) -> Result<usize, usize>
    where
        T: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.items.binary_search_by(|t| t.borrow().cmp(item))
    }

    /// As `BTreeSet::insert`: false when it was there (kept as it was).
    pub fn insert(&mut self, item: T) -> bool {
        let at = match self.items.last() {
            Some(last) if *last < item => Err(self.items.len()),
            _ => self.find(&item),
        };
        match at {
            Ok(_) => false,
            Err(i) => {
                moved(self.items.len() - i);
                self.items.insert(i, item);
                true
            }
        }
    }

    pub fn contains<Q>(&self, item: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(item).is_ok()
    }

    pub fn remove<Q>(&mut self, item: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(item).map(|i| self.items.remove(i)).is_ok()
    }
}

impl<T> Default for SortedSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Formats as `BTreeSet` does (`{a, b}`).
impl<T: fmt::Debug> fmt::Debug for SortedSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl<T: Ord> FromIterator<T> for SortedSet<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut set = Self::new();
        set.extend(iter);
        set
    }
}

/// In O(n log n) whatever the order (see [`settle`]); an item already
/// there is kept, as `BTreeSet::insert` does.
impl<T: Ord> Extend<T> for SortedSet<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        let sorted = self.items.len();
        self.items.extend(iter);
        settle(&mut self.items, sorted, T::cmp, false);
    }
}

impl<T: Ord, const N: usize> From<[T; N]> for SortedSet<T> {
    fn from(items: [T; N]) -> Self {
        items.into_iter().collect()
    }
}

/// As a sequence in order, as `BTreeSet` serializes (CLI and tests only).
#[cfg(feature = "cli")]
impl<T: serde::Serialize> serde::Serialize for SortedSet<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'a, T> IntoIterator for &'a SortedSet<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T> IntoIterator for SortedSet<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    /// A small LCG (Knuth's MMIX constants): reproducible operation mixes.
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self, below: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % below
        }
    }

    fn same_map(ours: &SortedMap<u8, u32>, theirs: &BTreeMap<u8, u32>, at: &str) {
        assert_eq!(ours.len(), theirs.len(), "{at}");
        assert_eq!(ours.is_empty(), theirs.is_empty(), "{at}");
        assert!(ours.iter().eq(theirs.iter()), "{at}");
        assert!(ours.iter().rev().eq(theirs.iter().rev()), "{at}");
        assert!(ours.keys().eq(theirs.keys()), "{at}");
        assert!(ours.values().eq(theirs.values()), "{at}");
        assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "{at}");
    }

    /// Random insert/remove/get/entry sequences over a small key space
    /// (so keys repeat) give what `BTreeMap` gives, step by step.
    #[test]
    fn map_agrees_with_btreemap_on_random_operations() {
        for seed in 0..200 {
            let mut rng = Lcg(seed);
            let mut ours = SortedMap::new();
            let mut theirs = BTreeMap::new();
            for step in 0..300 {
                let k = rng.next(40) as u8;
                let v = rng.next(1000) as u32;
                let at = format!("seed {seed} step {step}");
                match rng.next(8) {
                    0..=2 => assert_eq!(ours.insert(k, v), theirs.insert(k, v), "{at}"),
                    3 => assert_eq!(ours.remove(&k), theirs.remove(&k), "{at}"),
                    4 => {
                        assert_eq!(ours.get(&k), theirs.get(&k), "{at}");
                        assert_eq!(ours.contains_key(&k), theirs.contains_key(&k), "{at}");
                    }
                    5 => {
                        if let (Some(a), Some(b)) = (ours.get_mut(&k), theirs.get_mut(&k)) {
                            *a += v;
                            *b += v;
                        }
                        assert_eq!(ours.get(&k), theirs.get(&k), "{at}");
                    }
                    6 => {
                        *ours.entry(k).or_default() += v;
                        *theirs.entry(k).or_default() += v;
                    }
                    _ => {
                        let a = *ours.entry(k).or_insert(v);
                        let b = *theirs.entry(k).or_insert(v);
                        assert_eq!(a, b, "{at}");
                    }
                }
                same_map(&ours, &theirs, &at);
            }
            let ours_owned: Vec<_> = ours.clone().into_iter().collect();
            let theirs_owned: Vec<_> = theirs.clone().into_iter().collect();
            assert_eq!(ours_owned, theirs_owned, "seed {seed}");
        }
    }

    /// Collecting and extending with repeated keys keep the last value, as
    /// `BTreeMap` does.
    #[test]
    fn collect_and_extend_keep_the_last_value_of_a_key() {
        for seed in 0..200 {
            let mut rng = Lcg(seed);
            let pairs: Vec<(u8, u32)> = (0..rng.next(60))
                .map(|_| (rng.next(20) as u8, rng.next(1000) as u32))
                .collect();
            let more: Vec<(u8, u32)> = (0..rng.next(60))
                .map(|_| (rng.next(20) as u8, rng.next(1000) as u32))
                .collect();
            let mut ours: SortedMap<u8, u32> = pairs.iter().copied().collect();
            let mut theirs: BTreeMap<u8, u32> = pairs.iter().copied().collect();
            same_map(&ours, &theirs, &format!("seed {seed} collect"));
            ours.extend(more.iter().copied());
            theirs.extend(more.iter().copied());
            same_map(&ours, &theirs, &format!("seed {seed} extend"));
        }
        let from = SortedMap::from([(2, "b"), (1, "a"), (2, "c")]);
        assert_eq!(from.as_slice(), [(1, "a"), (2, "c")]);
        assert_eq!(format!("{from:?}"), r#"{1: "a", 2: "c"}"#);
    }

    /// A key that counts its comparisons.
    #[derive(Debug, Clone, PartialEq, Eq)]
    struct Counted(u32);

    thread_local! {
        static COMPARED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    impl PartialOrd for Counted {
        fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(o))
        }
    }

    impl Ord for Counted {
        fn cmp(&self, o: &Self) -> std::cmp::Ordering {
            COMPARED.with(|c| c.set(c.get() + 1));
            self.0.cmp(&o.0)
        }
    }

    /// The work (comparisons and entries moved) of collecting `n` keys in
    /// the order `keys` gives, then (`more`) extending with `n` others
    /// between them.
    fn work(keys: &dyn Fn(u32) -> u32, n: u32, more: bool) -> (usize, usize) {
        COMPARED.with(|c| c.set(0));
        MOVED.with(|m| m.set(0));
        let mut map: SortedMap<Counted, u32> = (0..n).map(|i| (Counted(keys(i)), i)).collect();
        let mut set: SortedSet<Counted> = (0..n).map(|i| Counted(keys(i))).collect();
        if more {
            map.extend((0..n).map(|i| (Counted(keys(i) + 1), i)));
            set.extend((0..n).map(|i| Counted(keys(i) + 1)));
        }
        assert_eq!(map.len(), set.len());
        (COMPARED.with(|c| c.get()), MOVED.with(|m| m.get()))
    }

    /// Building from keys in any order is O(n log n): keys in descending
    /// order (a feature file can hold them so), shuffled, or extending with
    /// keys between those there cost as few comparisons and moves as a
    /// sort, where an insert each moves every entry after it (n²/2 moves).
    /// Counted, not timed.
    #[test]
    fn building_in_any_order_is_n_log_n() {
        let n: u32 = 1 << 14;
        let log = 14;
        // Ascending: about one comparison a key, nothing moved.
        let (cmp, moved) = work(&|i| 4 * i, n, false);
        assert!(cmp <= 4 * n as usize, "ascending: {cmp} comparisons");
        assert_eq!(moved, 0, "ascending");
        let descending = |i: u32| 4 * (n - i);
        let shuffled = |i: u32| (i.wrapping_mul(2654435761) >> 8) & !3;
        for (what, keys, more) in [
            ("descending", &descending as &dyn Fn(u32) -> u32, false),
            ("shuffled", &shuffled, false),
            ("ascending, then between", &|i| 4 * i, true),
            ("descending, then between", &descending, true),
        ] {
            let (cmp, moved) = work(keys, n, more);
            // Two builds of n, and two extends of n more over n.
            let items = 2 * n as usize * if more { 3 } else { 1 };
            assert!(cmp <= 4 * items * log, "{what}: {cmp} comparisons");
            assert!(moved <= 2 * items, "{what}: {moved} entries moved");
        }
    }

    /// `Runs` gives what `BTreeMap` gives for inserts (repeated keys: the
    /// latest wins) and lookups in any order, and at the end the same map.
    #[test]
    fn runs_agree_with_btreemap() {
        for seed in 0..100 {
            let mut rng = Lcg(seed);
            let mut ours = Runs::new();
            let mut theirs = BTreeMap::new();
            for step in 0..rng.next(300) {
                let k = rng.next(60) as u8;
                if rng.next(3) == 0 {
                    assert_eq!(ours.get(&k), theirs.get(&k), "seed {seed} step {step}");
                } else {
                    ours.insert(k, step);
                    theirs.insert(k, step);
                }
            }
            let all: Vec<_> = theirs.into_iter().collect();
            assert_eq!(ours.into_sorted(), all, "seed {seed}");
        }
        let mut names: Runs<String, usize> = Runs::default();
        names.insert("b".into(), 1);
        names.insert("a".into(), 2);
        names.insert("b".into(), 3);
        assert_eq!(names.get("b"), Some(&3));
        assert_eq!(names.get("c"), None);
    }

    /// Inserts in any order move O(n log n) entries and a lookup compares
    /// O(log² n) keys, where `SortedMap::insert` in descending order moves
    /// n²/2. Counted, not timed.
    #[test]
    fn runs_cost_log_n_an_item_in_any_order() {
        let n: u32 = 1 << 16;
        let log = 17;
        let shuffled = |i: u32| i.wrapping_mul(2654435761) >> 8;
        for (what, key) in [
            ("ascending", &(|i| i) as &dyn Fn(u32) -> u32),
            ("descending", &|i| n - i),
            ("shuffled", &shuffled),
            ("one key", &|_| 7),
        ] {
            let (moved, probed) = (moves(), probes());
            let mut runs = Runs::new();
            for i in 0..n {
                runs.insert(key(i), i);
            }
            let moved = moves() - moved;
            assert!(moved <= (n * log) as usize, "{what}: {moved} entries moved");
            for i in 0..n {
                assert!(runs.get(&key(i)).is_some(), "{what}");
                assert!(runs.get(&u32::MAX).is_none(), "{what}");
            }
            let probed = probes() - probed;
            assert!(
                probed <= (2 * n * log * log) as usize,
                "{what}: {probed} keys compared"
            );
        }
    }

    /// Lookups by a borrowed form (`&str` for `String` keys), as in `BTreeMap`.
    #[test]
    fn string_keys_are_looked_up_by_str() {
        let mut m: SortedMap<String, String> = SortedMap::new();
        m.insert("vendor".into(), "10de".into());
        m.insert("class".into(), "0302".into());
        assert_eq!(m.get("vendor").map(String::as_str), Some("10de"));
        assert!(m.contains_key("class") && !m.contains_key("device"));
        m.get_mut("class").unwrap().push('x');
        assert_eq!(m.remove("class").as_deref(), Some("0302x"));
        assert_eq!(m.keys().collect::<Vec<_>>(), ["vendor"]);
        let equal: SortedMap<String, String> = [("vendor".to_string(), "10de".to_string())].into();
        assert_eq!(m, equal);
        assert_ne!(m, SortedMap::default());
    }

    #[test]
    fn set_agrees_with_btreeset_on_random_operations() {
        for seed in 0..200 {
            let mut rng = Lcg(seed);
            let mut ours = SortedSet::new();
            let mut theirs = BTreeSet::new();
            for step in 0..300 {
                let x = rng.next(40) as u16;
                let at = format!("seed {seed} step {step}");
                match rng.next(4) {
                    0 | 1 => assert_eq!(ours.insert(x), theirs.insert(x), "{at}"),
                    2 => assert_eq!(ours.remove(&x), theirs.remove(&x), "{at}"),
                    _ => assert_eq!(ours.contains(&x), theirs.contains(&x), "{at}"),
                }
                assert_eq!(ours.len(), theirs.len(), "{at}");
                assert!(ours.iter().eq(theirs.iter()), "{at}");
                assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "{at}");
            }
            let items: Vec<u16> = (0..rng.next(80)).map(|_| rng.next(30) as u16).collect();
            let ours: SortedSet<u16> = items.iter().copied().collect();
            let theirs: BTreeSet<u16> = items.iter().copied().collect();
            assert!(
                ours.clone().into_iter().eq(theirs.into_iter()),
                "seed {seed}"
            );
        }
        let set = SortedSet::from(["b".to_string(), "a".to_string(), "b".to_string()]);
        assert!(set.contains("a") && !set.contains("c"));
        assert_eq!(set.as_slice(), ["a", "b"]);
        assert_eq!(set, ["a".to_string(), "b".to_string()].into());
        assert!(SortedSet::<u8>::default().is_empty());
    }
}
