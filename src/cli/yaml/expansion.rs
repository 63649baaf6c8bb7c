//! What YAML aliases build, bounded over the whole run (review 23 r23b
//! F5). The deserializer bounds each parse (250,000 nodes, 64 MiB of
//! scalars), not a run: a 360-byte file whose nested aliases expand to
//! 161,051 strings passes, and plan keeps what every file builds, so 40 such
//! files cost 835 MB and a few hundred a CI runner's memory.
//!
//! What a text writes is bounded by the bytes a run reads (plan: 128 MiB);
//! what its aliases add beyond that is charged here, by every YAML read of
//! the run, and refused past the run's bound, within the parse that
//! crosses it. Manifests seldom use aliases at all; the bounds leave real
//! trees far inside (a repeated list of tolerations in a thousand
//! manifests is some tens of thousands of nodes).

use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Result, bail};

use super::scalars::Written;

/// Nodes aliases may add in a run, all files together (plan keeps each
/// at some 120 bytes: about 120 MB).
pub(super) const RUN_NODES_MAX: usize = 1_000_000;
/// Bytes of scalars aliases may add in a run, all files together.
pub(super) const RUN_BYTES_MAX: usize = 32 << 20;
/// Nodes the texts of a run may write, all files together (review 24
/// r24a F3): reading YAML costs some 5 µs of CPU a node, whatever its
/// size, so a run's bytes alone (plan: 128 MiB) allowed minutes of small
/// nodes (`[a,a,...]`: half a million a MiB). A render of a pool writes
/// some hundreds; this is about 20 s of reading at most.
pub(super) const RUN_WRITTEN_MAX: usize = 4_000_000;

/// The nodes and bytes aliases added so far, against their bounds.
pub(super) struct Expansion {
    nodes: AtomicUsize,
    bytes: AtomicUsize,
    max_nodes: usize,
    max_bytes: usize,
    /// Nodes the texts themselves write, and their bound.
    written: AtomicUsize,
    max_written: usize,
}

/// The run's: every YAML read of the process charges it.
pub(super) static RUN: Expansion = Expansion::new(RUN_NODES_MAX, RUN_BYTES_MAX, RUN_WRITTEN_MAX);

impl Expansion {
    pub(super) const fn new(max_nodes: usize, max_bytes: usize, max_written: usize) -> Self {
        Self {
            nodes: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            max_nodes,
            max_bytes,
            written: AtomicUsize::new(0),
            max_written,
        }
    }

    /// Charge the nodes a text writes before it is deserialized (the
    /// costly part); refused past the run's bound.
    pub(super) fn charge_written(&self, written: Written) -> Result<()> {
        let all = (self.written)
            .fetch_add(written.nodes, Ordering::Relaxed)
            .saturating_add(written.nodes);
        if all > self.max_written {
            bail!(
                "it writes {} YAML nodes, and the YAML read so far in this run {all}: past \
                 the run's bound of {} nodes, which keeps a run's time in bounds (reading \
                 costs some microseconds a node, however small); give fewer or smaller \
                 manifests",
                written.nodes,
                self.max_written
            );
        }
        Ok(())
    }

    /// The deserializer's budget for a text writing `written`: its own
    /// bounds, or what the text writes and the run has left if less, so
    /// that a parse crossing the run's bound stops there.
    pub(super) fn budget(&self, written: Written) -> serde_saphyr::Budget {
        let left =
            |used: &AtomicUsize, max: usize| max.saturating_sub(used.load(Ordering::Relaxed));
        let mut budget = serde_saphyr::Budget::default();
        budget.max_nodes = budget.max_nodes.min(
            written
                .nodes
                .saturating_add(left(&self.nodes, self.max_nodes)),
        );
        budget.max_total_scalar_bytes = budget.max_total_scalar_bytes.min(
            written
                .bytes
                .saturating_add(left(&self.bytes, self.max_bytes)),
        );
        budget
    }

    /// Charge what a parse read (`read`: nodes, bytes) beyond what its text
    /// writes (`cut`: the parse stopped at its budget, there is more);
    /// refused if the run's bound is passed.
    pub(super) fn charge(&self, written: Written, read: (usize, usize), cut: bool) -> Result<()> {
        let (nodes, bytes) = (
            read.0.saturating_sub(written.nodes),
            read.1.saturating_sub(written.bytes),
        );
        let add =
            |used: &AtomicUsize, n: usize| used.fetch_add(n, Ordering::Relaxed).saturating_add(n);
        let (all_nodes, all_bytes) = (add(&self.nodes, nodes), add(&self.bytes, bytes));
        // A text whose aliases add nothing is read whatever came before.
        let (what, this, all, max) = if nodes > 0 && all_nodes > self.max_nodes {
            ("nodes", nodes, all_nodes, self.max_nodes)
        } else if bytes > 0 && all_bytes > self.max_bytes {
            ("bytes of strings", bytes, all_bytes, self.max_bytes)
        } else {
            return Ok(());
        };
        let least = if cut { "at least " } else { "" };
        bail!(
            "its aliases (`*name`) expand to {least}{this} {what} beyond what it writes, and \
             those of the YAML read so far in this run to {least}{all}: past the run's bound \
             of {max} {what} built from aliases, which keeps a run's memory in bounds; write \
             the repeated content out, or use fewer aliases"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bound is the run's: each parse alone within it, their sum not.
    #[test]
    fn charges_add_up_over_the_run() {
        let run = Expansion::new(100, 1000, 1000);
        let w = Written {
            nodes: 10,
            bytes: 50,
        };
        assert_eq!(run.budget(w).max_nodes, 110);
        run.charge(w, (70, 50), false).unwrap();
        assert_eq!(run.budget(w).max_nodes, 50);
        assert_eq!(run.budget(w).max_total_scalar_bytes, 1050);
        let e = format!("{:#}", run.charge(w, (71, 60), true).unwrap_err());
        assert!(
            e.contains("in this run to at least 121: past the run's bound of 100 nodes"),
            "{e}"
        );
        let bytes = Expansion::new(100, 1000, 1000);
        let e = format!("{:#}", bytes.charge(w, (10, 1051), false).unwrap_err());
        assert!(
            e.contains("past the run's bound of 1000 bytes of strings"),
            "{e}"
        );
        // What the texts write, over the run.
        let written = Expansion::new(100, 1000, 25);
        written.charge_written(w).unwrap();
        written.charge_written(w).unwrap();
        let e = format!("{:#}", written.charge_written(w).unwrap_err());
        assert!(
            e.contains(
                "it writes 10 YAML nodes, and the YAML read so far in this run 30: past the \
                 run's bound of 25 nodes"
            ),
            "{e}"
        );
    }
}
