//! The clap types of `iso`: embed, show, remove, fleet.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::*;

#[derive(Debug, Subcommand)]
pub enum IsoCmd {
    /// Embed an Ignition config in a live ISO
    ///
    /// The config is first checked as the node's Ignition would read it: the
    /// types of its spec version (3.0.0-3.5.0) and Ignition's rules for
    /// paths, units, drop-ins, URLs, compression, modes and hashes. One the
    /// node would refuse is refused here, naming the file and the field;
    /// keys the version does not have are warned about (Ignition ignores
    /// them).
    #[command(after_help = EMBED_EXAMPLES)]
    Embed(IsoEmbedConfig),
    /// Print the Ignition config embedded in a live ISO
    #[command(after_help = SHOW_EXAMPLES)]
    Show(IsoShowConfig),
    /// Remove the embedded Ignition config from a live ISO
    #[command(after_help = REMOVE_EXAMPLES)]
    Remove(IsoRemoveConfig),
    /// One live ISO for a fleet: each machine installs into the pool its
    /// hardware selects
    ///
    /// The embedded config makes the live system install unattended, as
    /// `coreos-installer iso customize --dest-device` does, with one step
    /// before coreos-installer: a static selector reads the machine's facts,
    /// evaluates the node rules as the kubelet wrapper will at registration,
    /// and picks the pool whose nodeSelector the labels match (one custom
    /// pool beats worker). Its pointer config becomes the destination
    /// config. No match, two custom pools, or rules it cannot use: the
    /// install does not run, and the console says why.
    #[command(after_help = FLEET_EXAMPLES)]
    Fleet(IsoFleetConfig),
}

#[derive(Debug, Args)]
pub struct IsoFleetConfig {
    /// A pool and where to read it: a gitops directory (its
    /// MachineConfigPool and MachineConfigs), a pointer Ignition config, or
    /// its <pool>-user-data-managed Secret as YAML; repeat a pool to give
    /// both. `worker` alone: the built-in pool, its pointer from --mcs-url
    #[arg(long = "pool", value_name = "NAME[=SOURCE]", required = true)]
    pub pools: Vec<String>,
    /// The cluster's MachineConfigPools (oc get machineconfigpools -o
    /// yaml): each is recorded on the installed node by its nodeSelector,
    /// not installed into, so its wrapper fences and its sync holds a
    /// label change selecting a pool left off the ISO
    #[arg(long, value_name = "FILE")]
    pub cluster_pools: Option<PathBuf>,
    /// Install destination device of every pool without its own
    /// (--pool-dest-device). Wiped without a prompt on every machine whose
    /// hardware selects a pool
    #[arg(long, value_name = "PATH")]
    pub dest_device: Option<String>,
    /// A pool's own install destination device (GPU boxes on NVMe, storage
    /// nodes on SATA); repeat for each such pool
    #[arg(long = "pool-dest-device", value_name = "NAME=PATH")]
    pub pool_dest_devices: Vec<String>,
    /// Node rules (NodeFeatureRule YAML) the pools were rendered with
    #[arg(long, value_name = "FILE")]
    pub rules: Vec<PathBuf>,
    /// Leave this rule of the --rules files to the cluster's NFD, as the
    /// pools were rendered: the selector does not evaluate it, a warning
    /// each (RULE or OBJECT/RULE, repeatable; never a rule that sets taints)
    #[arg(long = "leave-to-nfd", value_name = "RULE", requires = "rules")]
    pub leave_to_nfd: Vec<String>,
    /// Also the labels NFD's built-in sources of this flavour would write
    #[arg(long, value_enum, value_name = "FLAVOUR")]
    pub nfd_labels: Option<NfdLabelsArg>,
    /// For pools given without a pointer config: the Machine Config
    /// Server, https://api-int.<cluster>.<domain>:22623
    #[arg(long, value_name = "URL", requires = "ca_file")]
    pub mcs_url: Option<String>,
    /// PEM CA bundle of the MCS: the CA of --mcs-url's pointers, and the
    /// only CA every pool's pointer config may trust
    #[arg(long, value_name = "PEM")]
    pub ca_file: Option<PathBuf>,
    /// The live ISO's architecture: the selector of that architecture is
    /// taken from beside this program
    #[arg(long, value_enum, value_name = "ARCH", default_value = "x86_64")]
    pub arch: ArchArg,
    /// The static selector program [default: kubelet-labeler-select-ARCH
    /// beside this program]
    #[arg(long, value_name = "FILE")]
    pub selector: Option<PathBuf>,
    /// Check everything and print each pool's nodeSelector and device, and
    /// with --facts-root the pool each machine would install into; write
    /// nothing (the ISO is then optional)
    #[arg(long, conflicts_with = "output")]
    pub dry_run: bool,
    /// With --dry-run: a machine's root (/, or a copy of its /sys, /proc
    /// and /etc/os-release) to choose a pool for, as the ISO would; repeat
    /// for several machines
    #[arg(long, value_name = "DIR", requires = "dry_run")]
    pub facts_root: Vec<PathBuf>,
    /// Write the ISO to a new file ("-" for stdout) instead of in place
    #[arg(short, long, value_name = "OUTPUT")]
    pub output: Option<PathBuf>,
    /// Replace an Ignition config that is already embedded, and the -o
    /// file if it exists
    #[arg(short, long)]
    pub force: bool,
    /// ISO image
    #[arg(value_name = "ISO", required_unless_present = "dry_run")]
    pub input: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("nodes").args(["pool", "role"])))]
#[command(group(
    clap::ArgGroup::new("content")
        .multiple(true)
        .args(["labels", "taints", "profile", "rules", "nfd_labels", "arches", "wrappers"])
        .requires("nodes")
))]
pub struct IsoEmbedConfig {
    /// Ignition config to embed ("-" for stdin) [default: stdin, unless
    /// --pool or --role renders one]
    #[arg(
        short = 'i',
        long = "ignition-file",
        value_name = "CONFIG",
        conflicts_with_all = [
            "pool", "role", "labels", "taints", "profile", "rules", "nfd_labels", "arches",
            "wrappers", "pool_label", "merge_url", "ignition_version", "base_role",
        ]
    )]
    pub ignition_file: Option<PathBuf>,
    // With --pool or --role: the config `render ignition` writes with the
    // same flags (the full config; with --merge-url, the pointer config).
    #[command(flatten)]
    pub pool: PoolArgs,
    /// Embed a pointer config that merges this URL (the pool's MCS config)
    /// instead of the full config; the labels, taints, rules and wrappers are
    /// the MCS's
    #[arg(
        long,
        value_name = "URL",
        requires_all = ["ca_file", "pool"],
        conflicts_with_all = [
            "labels", "taints", "profile", "rules", "nfd_labels", "arches",
            "wrappers", "pool_label",
        ]
    )]
    pub merge_url: Option<String>,
    /// With --merge-url: PEM CA bundle of the MCS
    #[arg(long, value_name = "PEM", requires = "merge_url")]
    pub ca_file: Option<PathBuf>,
    /// Write the ISO to a new file ("-" for stdout) instead of in place
    #[arg(short, long, value_name = "OUTPUT")]
    pub output: Option<PathBuf>,
    /// Replace an Ignition config that is already embedded, and the -o
    /// file if it exists
    #[arg(short, long)]
    pub force: bool,
    /// Embed the config as given, without checking it against its Ignition
    /// spec version (as coreos-installer does)
    #[arg(long)]
    pub no_validate: bool,
    /// ISO image
    #[arg(value_name = "ISO")]
    pub input: PathBuf,
}

#[derive(Debug, Args)]
pub struct IsoShowConfig {
    /// ISO image
    #[arg(value_name = "ISO")]
    pub input: PathBuf,
}

#[derive(Debug, Args)]
pub struct IsoRemoveConfig {
    /// Write the ISO to a new file ("-" for stdout) instead of in place
    #[arg(short, long, value_name = "OUTPUT")]
    pub output: Option<PathBuf>,
    /// ISO image
    #[arg(value_name = "ISO")]
    pub input: PathBuf,
}
