//! The clap types of `render`: drop-ins, MachineConfigs, Ignition.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::*;

#[derive(Debug, Subcommand)]
pub enum RenderCmd {
    /// Write the drop-ins and the wrapper into a filesystem tree
    #[command(after_help = DROPINS_EXAMPLES)]
    Dropins(RenderDropinsConfig),
    /// Write MachineConfigs, the MachineConfigPool and a kustomization
    #[command(after_help = MACHINECONFIG_EXAMPLES)]
    Machineconfig(RenderMachineConfigConfig),
    /// Write one Ignition config (or a pointer config with --merge-url)
    #[command(after_help = IGNITION_EXAMPLES)]
    Ignition(RenderIgnitionConfig),
}

/// Labels and taints to register with.
#[derive(Debug, Args, Clone)]
pub struct AdditionsArgs {
    /// Label to register with, KEY=VALUE or KEY (repeatable)
    #[arg(long = "label", value_name = "K=V")]
    pub labels: Vec<String>,
    /// Taint to register with, KEY=VALUE:EFFECT or KEY:EFFECT (repeatable)
    #[arg(long = "taint", value_name = "K=V:EFFECT")]
    pub taints: Vec<String>,
    /// Label rules to validate against
    #[arg(long, value_enum, value_name = "P")]
    pub profile: Option<ProfileArg>,
    /// NodeFeatureRule file whose rules the node evaluates on its own
    /// hardware at each kubelet start (repeatable, "-" for stdin)
    #[arg(long = "rules", value_name = "FILE")]
    pub rules: Vec<PathBuf>,
    /// Leave this rule of the --rules files to the cluster's NFD, which
    /// applies it after the node joins: not evaluated at boot, a warning
    /// each (RULE or OBJECT/RULE, repeatable; never a rule that sets taints)
    #[arg(long = "leave-to-nfd", value_name = "RULE", requires = "rules")]
    pub leave_to_nfd: Vec<String>,
    /// Also register with the labels NFD's built-in sources of this flavour
    /// would write (the GPU Operator reads them)
    #[arg(long, value_enum, value_name = "FLAVOUR")]
    pub nfd_labels: Option<NfdLabelsArg>,
}

#[derive(Debug, Args)]
pub struct RenderDropinsConfig {
    /// Root of the filesystem tree to write into
    #[arg(long, value_name = "DIR")]
    pub root: PathBuf,
    #[command(flatten)]
    pub additions: AdditionsArgs,
    /// Architecture to install a wrapper for (repeatable) [default: this
    /// host's]
    #[arg(long = "arch", value_parser = ArchParser, value_name = "ARCH")]
    pub arches: Vec<ArchArg>,
    /// Static wrapper binary to install, one per architecture (repeatable;
    /// its architecture is read from its ELF header) [default: the static
    /// build for each --arch beside this program]
    #[arg(long = "wrapper", value_name = "PATH")]
    pub wrappers: Vec<PathBuf>,
    /// Unit to wrap
    #[arg(long, value_name = "NAME", default_value = "kubelet.service")]
    pub unit: String,
    /// Overwrite files that already exist (with --remove: remove an env
    /// drop-in holding lines of your own too)
    #[arg(short, long)]
    pub force: bool,
    /// Create --root if it does not exist (a new tree to copy to nodes);
    /// without it a missing --root is an error
    #[arg(long)]
    pub create_root: bool,
    /// Remove what render wrote for --unit instead (the wrappers, the
    /// generator, the env drop-in, and the generator's drop-in and the
    /// wrapper's state under /run), all or nothing; an env drop-in with
    /// lines of your own is refused without --force
    #[arg(
        long,
        conflicts_with_all = [
            "labels", "taints", "profile", "rules", "nfd_labels", "arches",
            "wrappers", "create_root",
        ]
    )]
    pub remove: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArchArg {
    #[value(name = "x86_64")]
    X86_64,
    #[value(name = "aarch64")]
    Aarch64,
    #[value(name = "ppc64le")]
    Ppc64le,
    #[value(name = "s390x")]
    S390x,
}

/// `--arch`: the names `uname -m` prints, and for the names Debian and Go
/// use (amd64, arm64, ...) a suggestion of ours, as a usage error.
#[derive(Debug, Clone, Copy)]
pub struct ArchParser;

impl clap::builder::TypedValueParser for ArchParser {
    type Value = ArchArg;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<ArchArg, clap::Error> {
        let inner = clap::builder::EnumValueParser::<ArchArg>::new();
        inner.parse_ref(cmd, arg, value).map_err(|e| {
            let ours = match value.to_str() {
                Some("amd64" | "x64" | "x86-64" | "AMD64") => "x86_64",
                Some("arm64" | "aarch64_be" | "ARM64") => "aarch64",
                Some("ppc64el" | "powerpc64le") => "ppc64le",
                Some("s390" | "zarch") => "s390x",
                _ => return e,
            };
            let flag = arg.map_or("--arch".to_string(), |a| a.to_string());
            let mut err = clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                format!(
                    "invalid value '{}' for '{flag}': the kernel (uname -m) calls it {ours}; use --arch {ours}\n",
                    value.to_string_lossy()
                ),
            );
            err = err.with_cmd(cmd);
            err
        })
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            ArchArg::value_variants()
                .iter()
                .filter_map(|v| v.to_possible_value()),
        ))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RoleArg {
    /// Every worker node
    Worker,
    /// Every control-plane node
    Master,
}

/// Roles a custom pool may inherit: the MCO supports custom pools of
/// worker only (4.18+ refuse any other at admission).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BaseRoleArg {
    /// The worker pool's MachineConfigs
    Worker,
}

/// Ignition spec versions we write. The default is the newest one every
/// OpenShift release we support (4.14+) reads: the MCO of 4.14-4.18 parses
/// MachineConfigs up to 3.4.0 and degrades the pool on 3.5.0, and their boot
/// images' Ignition stops at 3.4.0 too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IgnitionVersionArg {
    /// OpenShift 4.19+ only (its MCO and boot images read 3.5.0)
    #[value(name = "3.5.0")]
    V3_5_0,
    /// OpenShift 4.14+ (every release this tool supports)
    #[value(name = "3.4.0")]
    V3_4_0,
    /// Readers older than 3.4.0 (installer-made pointer configs are 3.2.0)
    #[value(name = "3.2.0")]
    V3_2_0,
}

/// What every OpenShift render shares.
#[derive(Debug, Args)]
pub struct PoolArgs {
    /// Custom MachineConfigPool name
    #[arg(long, value_name = "NAME", value_parser = pool_name)]
    pub pool: Option<String>,
    /// Built-in role instead of a custom pool (no MachineConfigPool): every
    /// node of the role registers with the labels/taints
    #[arg(long, value_enum, value_name = "ROLE", conflicts_with_all = ["pool", "pool_label"])]
    pub role: Option<RoleArg>,
    #[command(flatten)]
    pub additions: AdditionsArgs,
    /// Role the pool inherits from (the MCO's custom pools inherit worker)
    #[arg(long, value_enum, value_name = "ROLE", default_value = "worker")]
    pub base_role: BaseRoleArg,
    /// Ignition spec version to emit; the default is the newest that every
    /// OpenShift from 4.14 reads (3.5.0 needs 4.19+)
    #[arg(long, value_enum, value_name = "V", default_value = "3.4.0")]
    pub ignition_version: IgnitionVersionArg,
    /// Architecture to carry a wrapper for (repeatable): nodes of any other
    /// architecture start kubelet unchanged [default: x86_64, or those of
    /// the --wrapper files]
    #[arg(long = "arch", value_parser = ArchParser, value_name = "ARCH")]
    pub arches: Vec<ArchArg>,
    /// Static wrapper binary to carry, one per architecture (repeatable; its
    /// architecture is read from its ELF header) [default: the built one for
    /// each --arch]
    #[arg(long = "wrapper", value_name = "PATH")]
    pub wrappers: Vec<PathBuf>,
    /// Label the pool selects nodes by [default: node.kubernetes.io/POOL=]
    #[arg(long, value_name = "K=V")]
    pub pool_label: Option<String>,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("destination").required(true).args(["output_dir", "output"])))]
#[command(group(clap::ArgGroup::new("nodes").required(true).args(["pool", "role"])))]
pub struct RenderMachineConfigConfig {
    #[command(flatten)]
    pub pool: PoolArgs,
    /// Directory to write the manifests into, made when missing; other
    /// pools' renders and your files may share it (kept, and listed in its
    /// kustomization as they were). The cluster-wide node disruption policy
    /// goes to DIR/cluster-wide/, out of the kustomization and of `oc apply
    /// -f DIR`: apply it server-side, as stderr says
    #[arg(long, value_name = "DIR", conflicts_with = "output")]
    pub output_dir: Option<PathBuf>,
    /// Write the manifests to apply as one YAML stream to this file ("-" for
    /// stdout, for `oc apply -f -`); the kustomization and the cluster-wide
    /// node disruption policy are left out
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Replace this pool's earlier manifests (keeping the fields render does
    /// not write, dropping YAML comments in a file it rewrites) and remove
    /// those this render no longer writes; each named on stderr
    #[arg(short, long)]
    pub force: bool,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("nodes").required(true).args(["pool", "role"])))]
pub struct RenderIgnitionConfig {
    #[command(flatten)]
    pub pool: PoolArgs,
    /// Render a pointer config that merges this URL (the pool's MCS config);
    /// the labels, taints, rules and wrappers are the MCS's, so their flags
    /// go to `render machineconfig` instead
    #[arg(
        long,
        value_name = "URL",
        requires = "ca_file",
        conflicts_with_all = [
            "labels", "taints", "profile", "rules", "nfd_labels", "arches",
            "wrappers", "pool_label",
        ]
    )]
    pub merge_url: Option<String>,
    /// With --merge-url: PEM CA bundle that signs its server
    #[arg(long, value_name = "PEM", requires = "merge_url")]
    pub ca_file: Option<PathBuf>,
    /// Output file ("-" for stdout)
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Overwrite an existing output file
    #[arg(short, long)]
    pub force: bool,
}

impl From<ArchArg> for crate::cli::render::arch::Arch {
    fn from(a: ArchArg) -> Self {
        match a {
            ArchArg::X86_64 => Self::X86_64,
            ArchArg::Aarch64 => Self::Aarch64,
            ArchArg::Ppc64le => Self::Ppc64le,
            ArchArg::S390x => Self::S390x,
        }
    }
}

impl IgnitionVersionArg {
    /// The spec version as Ignition configs write it.
    pub fn spec(self) -> &'static str {
        match self {
            IgnitionVersionArg::V3_5_0 => "3.5.0",
            IgnitionVersionArg::V3_4_0 => "3.4.0",
            IgnitionVersionArg::V3_2_0 => "3.2.0",
        }
    }
}
