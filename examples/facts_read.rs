//! For benches/facts.sh: the cost of facts::read alone (what the wrapper
//! pays at each kubelet start). Prints the median of N calls in µs; with
//! FEATURE, of reading that feature alone (as the wrapper does when the
//! rules name only it); with ATTRIBUTES (`feature.attr`, comma-separated),
//! of only those attributes, as when the rules name them by key.
use std::path::Path;
use std::time::Instant;

use kubelet_labeler::node::facts::{FactsOptions, read};
use kubelet_labeler::node::sorted::SortedSet;

fn main() {
    let mut args = std::env::args().skip(1);
    let root = args
        .next()
        .expect("usage: facts_read ROOT [N [FEATURE [ATTRIBUTES]]]");
    let n: usize = args
        .next()
        .map_or(1001, |s| s.parse().expect("N is a number"));
    let only: Option<SortedSet<String>> = args.next().map(|f| SortedSet::from([f]));
    let attributes: Option<SortedSet<String>> = args
        .next()
        .map(|a| a.split(',').map(String::from).collect());
    let opts = FactsOptions {
        root: Path::new(&root),
        nodename: None,
        only: only.as_ref(),
        attributes: attributes.as_ref(),
    };
    let mut times: Vec<f64> = (0..n)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(read(&opts));
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!("{:.1}", times[n / 2]);
}
