//! Command-line types only: clap derive structs, no logic. Each command's
//! adapter (`cli::<module>::command`, beside the module it drives) turns them
//! into the plain option structs the logic modules take; `main.rs` dispatches.
// Keep help text within 80 columns.

use std::path::PathBuf;

use clap::{Args, Parser, ValueEnum};

mod iso;
mod render;
pub use iso::*;
pub use render::*;

#[derive(Debug, Parser)]
#[command(
    name = "kubelet-labeler",
    // The node format too: two builds of one version that write different
    // node files say so (`contract::NODE_FORMAT`).
    version = concat!(env!("CARGO_PKG_VERSION"), "+node.", crate::node_format!()),
    about = "Make nodes register with kubelet already labeled and tainted",
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true,
    help_expected = true,
    after_help = TOP_EXAMPLES
)]
pub enum Cmd {
    /// Show the kubelet command a node's unit files give, and what the
    /// wrapper would exec
    #[command(after_help = EXPLAIN_EXAMPLES)]
    Explain(ExplainConfig),
    /// Check --node-labels/--register-with-taints as kubelet would
    #[command(after_help = VALIDATE_EXAMPLES)]
    Validate(ValidateConfig),
    /// Print the node's hardware facts under NFD's feature names
    ///
    /// Read under --root as NFD's nfd-worker reads them, from files only:
    /// pci.device from /sys/bus/pci/devices/*/ (each function's uevent, else
    /// all five of class, vendor, device, subsystem_vendor and
    /// subsystem_device: one missing skips the function, as in NFD);
    /// usb.device, network.device, storage.block, memory.nv, memory.numa,
    /// cpu.topology from /sys/bus/usb, /sys/class/net, /sys/block,
    /// /sys/bus/nd, /sys/bus/node, /sys/bus/cpu; cpu.cpuid and cpu.model from
    /// /proc/cpuinfo; kernel.version and system.name from
    /// /proc/sys/kernel/{osrelease,hostname}; system.osrelease from
    /// /etc/os-release; system.dmiid from /sys/devices/virtual/dmi/id;
    /// kernel.config from the first of /proc/config.gz, /usr/lib/modules/
    /// <release>/config, /boot/config-<release> (and NFD's other paths);
    /// kernel.loadedmodule and kernel.enabledmodule from /proc/modules and
    /// /lib/modules/<release>/modules.builtin; kernel.selinux, kernel.kvm
    /// from /sys/fs/selinux/enforce, /sys/devices/virtual/misc/kvm;
    /// cpu.cstate, cpu.pstate from cpuidle, intel_idle, intel_pstate and
    /// cpufreq in /sys; memory.swap, memory.hugepages from /proc/swaps,
    /// /sys/kernel/mm/hugepages; network.virtual from /sys/class/net;
    /// local.label, local.feature from the files in
    /// /etc/kubernetes/node-feature-discovery/features.d; cpu.rdt,
    /// cpu.security and cpu.sst from the CPUID instruction (x86-64) and
    /// kvm's tdx and sev* parameters, the misc cgroup's misc.capacity,
    /// resctrl's info/L3/num_closids, cpufreq's base_frequency and
    /// /sys/firmware/uv/prot_virt_host. The CPUID parts come from this CPU
    /// only when --root is /; a tree gives them from its
    /// kubelet-labeler.cpuid (--record-cpuid on the node writes it), and
    /// without one leaves cpu.rdt, cpu.sst, and cpu.security's sgx.* and
    /// tdx.protected out. A missing file is an absent feature.
    #[command(after_help = FACTS_EXAMPLES)]
    Facts(FactsConfig),
    /// Render drop-ins, MachineConfigs or Ignition
    #[command(subcommand, after_help = RENDER_EXAMPLES)]
    Render(RenderCmd),
    /// Embed, show or remove Ignition in CoreOS live ISOs
    #[command(subcommand, after_help = ISO_EXAMPLES)]
    Iso(IsoCmd),
    /// Bring a registered Node's labels up to date, as kubelet's own identity
    #[command(after_help = SYNC_EXAMPLES)]
    Sync(SyncConfig),
    /// Show what a change of rendered manifests does to every node of a fleet
    #[command(after_help = PLAN_EXAMPLES)]
    Plan(PlanConfig),
    /// Print a shell completion script
    #[command(after_help = COMPLETIONS_EXAMPLES)]
    Completions(CompletionsConfig),
    /// Write man pages, one per command, generated from this help
    #[command(after_help = MAN_EXAMPLES)]
    Man(ManConfig),
}

// Examples end each command's --help; every one is a command line that
// works as shown (paths aside). Exit codes are said once per command.
const TOP_EXAMPLES: &str = "\
Examples:
  kubelet-labeler render machineconfig --pool worker-gpu \\
      --output-dir gitops/worker-gpu
  kubelet-labeler explain --root /mnt/node --profile openshift
  kubelet-labeler completions bash > /etc/bash_completion.d/kubelet-labeler

Exit status: 0 success, 1 error (the message says which input and the fix),
2 usage; `validate` exits 1 when kubelet would refuse the flags.";

const EXPLAIN_EXAMPLES: &str = "\
Examples:
  kubelet-labeler explain --root /mnt/node --profile openshift \\
      --set-env KUBELET_NODE_NAME=worker-0
  kubelet-labeler explain --root / --json | jq .argv
  kubelet-labeler explain --machineconfig rendered-worker.yaml \\
      --machineconfig 50-gpu-kubelet-labeler-wrapper.yaml --rules gpu.yaml

Exit status: 0 success, 1 error (the message says which input and the fix)
or our labels/taints would not reach kubelet at boot: the wrapper missing,
bypassed by a later drop-in, or leaving them out (the reason on stderr),
2 usage.";

const FACTS_EXAMPLES: &str = "\
Examples:
  kubelet-labeler facts
  kubelet-labeler facts --root /mnt/node --json
  kubelet-labeler facts --nfd-labels openshift
  kubelet-labeler facts --record-cpuid > /mnt/copy-of-node/kubelet-labeler.cpuid

Exit status: 0 success (a missing source is an absent feature), 1 error (no
such --root, or --record-cpuid off x86-64), 2 usage.";

const VALIDATE_EXAMPLES: &str = "\
Examples:
  kubelet-labeler validate --profile openshift -- \\
      --node-labels=node-role.kubernetes.io/worker,node.kubernetes.io/gpu= \\
      --register-with-taints=nvidia.com/gpu=true:NoSchedule
  kubelet-labeler validate --json -- --node-labels=example.com/x=y

Exit status: 0 kubelet accepts the flags, 1 it refuses them (the message names
the key or taint and the rule), 2 usage.";

const RENDER_EXAMPLES: &str = "\
Examples:
  kubelet-labeler render machineconfig --pool worker-gpu \\
      --output-dir gitops/worker-gpu
  kubelet-labeler render ignition --pool worker-gpu -o worker-gpu.ign
  kubelet-labeler render dropins --root / --label node.kubernetes.io/gpu=

Exit status: 0 success, 1 error (the message says which input and the fix),
2 usage.";

const DROPINS_EXAMPLES: &str = "\
Examples:
  kubelet-labeler render dropins --root / --label node.kubernetes.io/gpu= \\
      --taint nvidia.com/gpu=true:NoSchedule && systemctl daemon-reload
  kubelet-labeler render dropins --root /mnt/image \\
      --wrapper ./kubelet-labeler-wrapper --label node.kubernetes.io/gpu=
  kubelet-labeler render dropins --root /srv/node-files --create-root \\
      --arch x86_64 --arch aarch64 --label node.kubernetes.io/pi=
  kubelet-labeler render dropins --root / --remove && systemctl daemon-reload

Exit status: 0 success, 1 error (the message says which input and the fix),
2 usage.";

const MACHINECONFIG_EXAMPLES: &str = "\
Examples:
  kubelet-labeler render machineconfig --pool worker-gpu \\
      --taint nvidia.com/gpu=true:NoSchedule --output-dir gitops/worker-gpu
  kubelet-labeler render machineconfig --pool worker-gpu -o - | oc apply -f -
  kubelet-labeler render machineconfig --pool worker-gpu \\
      --rules gpu-rules.yaml --nfd-labels openshift --output-dir gitops/gpu
  kubelet-labeler render machineconfig --role master \\
      --taint dedicated=control-plane:NoSchedule --output-dir masters/
  kubelet-labeler render machineconfig --pool worker-gpu --arch x86_64 \\
      --arch aarch64 --output-dir gitops/gpu   # a mixed-architecture cluster

Exit status: 0 success, 1 error (the message says which input and the fix),
2 usage.";

const IGNITION_EXAMPLES: &str = "\
Examples:
  kubelet-labeler render ignition --pool worker-gpu -o worker-gpu.ign
  kubelet-labeler render ignition --pool worker-gpu \\
      --merge-url https://api-int.ocp.example.com:22623/config/worker-gpu \\
      --ca-file ca.pem -o pointer.ign

Exit status: 0 success, 1 error (the message says which input and the fix),
2 usage.";

const ISO_EXAMPLES: &str = "\
Examples:
  kubelet-labeler iso embed -i pointer.ign -o node.iso rhcos-live.x86_64.iso
  kubelet-labeler iso show node.iso | jq .
  kubelet-labeler iso remove node.iso

Exit status: 0 success, 1 error (the message says which input and the fix),
2 usage.";

const EMBED_EXAMPLES: &str = "\
Examples:
  kubelet-labeler iso embed -i pointer.ign -o node.iso rhcos-live.x86_64.iso
  kubelet-labeler iso embed --pool worker-gpu \\
      --merge-url https://api-int.ocp.example.com:22623/config/worker-gpu \\
      --ca-file ca.pem rhcos-live.x86_64.iso
  kubelet-labeler iso embed --pool worker-gpu --rules gpu.yaml \\
      --arch x86_64 -o node.iso rhcos-live.x86_64.iso

Exit status: 0 success, 1 error (the message says which input and the fix),
2 usage.";

const SHOW_EXAMPLES: &str = "\
Examples:
  kubelet-labeler iso show node.iso | jq '.ignition.config.merge'

Exit status: 0 success, 1 error (no config embedded, or not a live ISO),
2 usage.";

const REMOVE_EXAMPLES: &str = "\
Examples:
  kubelet-labeler iso remove node.iso
  kubelet-labeler iso remove -o clean.iso node.iso

Exit status: 0 success, 1 error (the message says which input and the fix),
2 usage.";

const FLEET_EXAMPLES: &str = "\
Examples:
  kubelet-labeler iso fleet -o fleet.iso rhcos-live.x86_64.iso \\
      --dest-device /dev/nvme0n1 --rules gpu.yaml \\
      --pool worker-gpu=gitops/worker-gpu/ \\
      --pool worker-gpu=worker-gpu-user-data-managed.yaml \\
      --pool worker=worker-user-data-managed.yaml
  kubelet-labeler iso fleet -o fleet.iso rhcos-live.x86_64.iso \\
      --dest-device /dev/sda --rules gpu.yaml \\
      --mcs-url https://api-int.ocp.example.com:22623 --ca-file ca.pem \\
      --pool worker-gpu=gitops/worker-gpu/ --pool worker
  # GPU boxes install on NVMe, the rest on SATA; which pool would this
  # machine (/) and a copy of another's /sys and /proc pick?
  kubelet-labeler iso fleet --dry-run --facts-root / --facts-root node7/ \\
      --dest-device /dev/sda --pool-dest-device worker-gpu=/dev/nvme0n1 \\
      --rules gpu.yaml --mcs-url https://api-int.ocp.example.com:22623 \\
      --ca-file ca.pem --pool worker-gpu=gitops/worker-gpu/ --pool worker

Every machine booted from the ISO whose hardware selects a pool is wiped
and installed without a prompt.

Exit status: 0 success (with --dry-run: every --facts-root machine would
install), 1 error (the message says which input and the fix; with --dry-run:
a machine would not install), 2 usage.";

const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  source <(kubelet-labeler completions bash)
  kubelet-labeler completions zsh > \"${fpath[1]}/_kubelet-labeler\"
  kubelet-labeler completions fish \\
      > ~/.config/fish/completions/kubelet-labeler.fish

Exit status: 0 success, 2 usage.";

const MAN_EXAMPLES: &str = "\
Examples:
  kubelet-labeler man --output-dir /usr/local/share/man/man1
  kubelet-labeler man --output-dir /tmp/man && man -l /tmp/man/kubelet-labeler.1

Exit status: 0 success, 1 error (the message says which), 2 usage.";

#[derive(Debug, Args)]
pub struct CompletionsConfig {
    /// Shell to complete for
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

const SYNC_EXAMPLES: &str = "\
Examples:
  kubelet-labeler sync --root / --dry-run
  kubelet-labeler sync --root /mnt/node --kubeconfig ./node.kubeconfig

Exit status: 0 the Node matches, 1 drift remains that a node may not fix
(taints, another owner's value, the pool label, a forbidden key) or the API
server refused the request, 2 usage or bad input (nothing changed), 75 the
API server stayed unreachable or busy (429, 5xx) for --max-wait: try again
later (the sync's service starts it again a minute later).";

const PLAN_EXAMPLES: &str = "\
Examples:
  oc get nodes,nodefeatures,daemonsets,machineconfigpools -A -o json \\
      > fleet.json
  kubelet-labeler plan --from origin/main:gitops/ --to gitops/ \\
      --fleet fleet.json --format markdown
  kubelet-labeler plan --from old/ --to new/ --fleet fleet.json \\
      --own-unit-prefix acme- --fail-on reboot,lockout

Exit status: 0 no node changes (with --fail-on: none of those happens), 1 some
do, 2 usage or bad input, or the MCO refuses a pool's change (the plan is
written all the same).";

#[derive(Debug, Args)]
pub struct PlanConfig {
    /// The render before the change: a directory (read recursively), a
    /// file, or REV:PATH of this git repository (origin/main:gitops/)
    #[arg(long, value_name = "RENDER")]
    pub from: String,
    /// The render after the change, as --from
    #[arg(long, value_name = "RENDER")]
    pub to: String,
    /// The cluster's objects: `oc get nodes,nodefeatures,daemonsets,
    /// machineconfigpools,pods -A -o json` (or -o yaml), the cluster's
    /// MachineConfiguration, `facts --json` output named NODE.json
    #[arg(long, value_name = "FILE", required = true)]
    pub fleet: Vec<PathBuf>,
    /// Your apply deletes what the change removes from the render (Argo CD
    /// with `prune: true`, `oc apply --prune`); without it, a
    /// MachineConfig or pool removed from the render is planned as staying
    /// in the cluster, as `oc apply -f`, `oc apply -k` and Argo CD's
    /// default sync leave it
    #[arg(long)]
    pub prune: bool,
    /// Output format
    #[arg(long, value_enum, default_value_t = PlanFormatArg::Text)]
    pub format: PlanFormatArg,
    /// Exit 1 only when one of these happens to a node (for a CI gate)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "WHAT")]
    pub fail_on: Vec<FailOnArg>,
    /// Whose kubelet's label rules apply
    #[arg(long, value_enum, default_value_t = ProfileArg::Openshift)]
    pub profile: ProfileArg,
    /// The static wrapper a changed wrapper file must be, one per
    /// architecture (repeatable) [default: the one installed beside this
    /// program]
    #[arg(long, value_name = "FILE")]
    pub wrapper: Vec<PathBuf>,
    /// Units whose names start with PREFIX are your team's own: no unit of
    /// the OS or of an operator names them (repeatable; `acme-`). A
    /// service the pool's MachineConfigs add or change at another name
    /// is refused, since a unit plan cannot see may order itself after it
    #[arg(long, value_name = "PREFIX")]
    pub own_unit_prefix: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormatArg {
    /// Readable text
    Text,
    /// The whole plan as JSON
    Json,
    /// Markdown for a pull request's comment
    Markdown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOnArg {
    /// A node drains and reboots
    Reboot,
    /// NFD's worker or a GPU Operator DaemonSet stops being schedulable on a node
    Lockout,
    /// A node's registration taints change, or a taint command is needed
    Taint,
    /// Any node changes
    Change,
}

#[derive(Debug, Args)]
pub struct SyncConfig {
    /// Root of the node's filesystem tree
    #[arg(long, value_name = "DIR")]
    pub root: PathBuf,
    /// kubelet kubeconfig (a host path) [default: kubelet's --kubeconfig,
    /// else the profile's, under --root]
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Print what each key would get (add, change, remove, adopt, leave)
    /// and the taint drift; change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Unit whose configuration derives the labels
    #[arg(long, value_name = "NAME", default_value = "kubelet.service")]
    pub unit: String,
    /// Label rules [default: the installed wrapper's, else upstream]
    #[arg(long, value_enum, value_name = "P")]
    pub profile: Option<ProfileArg>,
    /// The label the node's pool selects it by: never changed unless
    /// --allow-pool-label
    #[arg(long, value_name = "KEY")]
    pub pool_label: Option<String>,
    /// Let the sync change the pool label (moves the node to another pool)
    #[arg(long)]
    pub allow_pool_label: bool,
    /// Read the node's hardware facts under this root [default: --root]
    #[arg(long, value_name = "DIR")]
    pub facts_root: Option<PathBuf>,
    /// Give up retrying an unreachable API server after this long
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub max_wait: u64,
}

#[derive(Debug, Args)]
pub struct ManConfig {
    /// Directory to write kubelet-labeler*.1 into
    #[arg(long, value_name = "DIR")]
    pub output_dir: PathBuf,
}

/// Which kubelet's label rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProfileArg {
    /// Upstream Kubernetes kubelet
    Upstream,
    /// OpenShift kubelet (also allows its five node-role labels)
    Openshift,
}

#[derive(Debug, Args)]
pub struct ExplainConfig {
    /// Root of the node's filesystem tree
    #[arg(long, value_name = "DIR", required_unless_present = "machineconfigs")]
    pub root: Option<PathBuf>,
    /// Explain the node tree these MachineConfigs write instead (repeatable,
    /// "-" for stdin; e.g. `oc get mc rendered-worker-... -o yaml`; a
    /// directory: its *.yaml, *.yml, *.json); exits 1 when the wrapper would
    /// start kubelet without our additions
    #[arg(
        long = "machineconfig",
        value_name = "FILE|DIR",
        conflicts_with_all = ["root", "unit_path"]
    )]
    pub machineconfigs: Vec<PathBuf>,
    /// With --machineconfig: explain this pool's node from MachineConfigs
    /// of several pools (a directory they share): the MachineConfigs its
    /// machineConfigSelector picks by their role label (its
    /// MachineConfigPool among the inputs, else role NAME, and for a custom
    /// pool worker's too, as the MCO's custom pools take them), and its
    /// rendered config
    #[arg(
        long = "pool",
        value_name = "NAME",
        requires = "machineconfigs",
        value_parser = pool_or_role_name
    )]
    pub pool: Option<String>,
    /// Unit to resolve
    #[arg(long, value_name = "NAME", default_value = "kubelet.service")]
    pub unit: String,
    /// Label rules to validate against [default: the installed wrapper's;
    /// without one, openshift with --machineconfig, else upstream]
    #[arg(long, value_enum, value_name = "P")]
    pub profile: Option<ProfileArg>,
    /// Set an environment variable as the service manager would (repeatable)
    #[arg(long = "set-env", value_name = "K=V", value_parser = manager_env_assignment)]
    pub set_env: Vec<(String, String)>,
    /// Unit search path instead of systemd's (colon-separated, under --root)
    #[arg(long, value_name = "DIRS")]
    pub unit_path: Option<String>,
    /// Read the node's hardware facts under this root [default: --root;
    /// with --machineconfig, none: give this or --facts]
    #[arg(long, value_name = "DIR")]
    pub facts_root: Option<PathBuf>,
    /// The node's facts as NFD gives them: its NodeFeature (`oc get
    /// nodefeature -n NS NODE -o yaml`) or `facts --json` output ("-" for
    /// stdin)
    #[arg(long, value_name = "FILE", conflicts_with = "facts_root")]
    pub facts: Option<PathBuf>,
    /// Preview these NodeFeatureRule files instead of the tree's rules
    /// (repeatable, "-" for stdin)
    #[arg(long = "rules", value_name = "FILE")]
    pub rules: Vec<PathBuf>,
    /// Leave this rule of the --rules files to the cluster's NFD, which
    /// applies it after the node joins: not evaluated at boot, a warning
    /// each (RULE or OBJECT/RULE, repeatable; never a rule that sets taints)
    #[arg(long = "leave-to-nfd", value_name = "RULE", requires = "rules")]
    pub leave_to_nfd: Vec<String>,
    /// Preview NFD's built-in label set of this flavour
    #[arg(long, value_enum, value_name = "FLAVOUR")]
    pub nfd_labels: Option<NfdLabelsArg>,
    /// The node's kubelet release (1.MINOR), to judge the unit's flags for
    /// [default: a rendered config's OpenShift release, or the root's
    /// /etc/os-release OPENSHIFT_VERSION or kubelet package; else unknown]
    #[arg(long, value_name = "1.MINOR", value_parser = kubelet_version)]
    pub kubelet_version: Option<crate::node::kubelet::version::KubeletVersion>,
    /// Print one JSON object
    #[arg(long)]
    pub json: bool,
}

/// Which NFD deployment's built-in labels to register with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NfdLabelsArg {
    /// kubernetes-sigs/node-feature-discovery defaults (pci-0302_10de.present)
    Upstream,
    /// OpenShift NFD operator defaults (pci-10de.present)
    Openshift,
}

#[derive(Debug, Args)]
pub struct FactsConfig {
    /// Root of the node's filesystem tree
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
    /// Node name for system.name, as kubelet's --hostname-override sets it
    #[arg(long, value_name = "NAME")]
    pub hostname_override: Option<String>,
    /// Print NFD's NodeFeature spec.features JSON
    #[arg(long, conflicts_with = "nfd_labels")]
    pub json: bool,
    /// Print the labels NFD's built-in sources of this flavour would write
    #[arg(long, value_enum, value_name = "FLAVOUR")]
    pub nfd_labels: Option<NfdLabelsArg>,
    /// Print this CPU's CPUID leaves that cpu.rdt, cpu.security and cpu.sst
    /// read, for a copy of this node's tree (its kubelet-labeler.cpuid)
    #[arg(long, conflicts_with_all = ["json", "nfd_labels", "hostname_override"])]
    pub record_cpuid: bool,
}

#[derive(Debug, Args)]
pub struct ValidateConfig {
    /// Label rules to validate against
    #[arg(long, value_enum, value_name = "P", default_value = "upstream")]
    pub profile: ProfileArg,
    /// Print one JSON object
    #[arg(long)]
    pub json: bool,
    /// Kubelet arguments (after --)
    #[arg(last = true, value_name = "KUBELET_ARGS", allow_hyphen_values = true)]
    pub args: Vec<String>,
}

impl From<ProfileArg> for crate::node::kubelet::Profile {
    fn from(p: ProfileArg) -> Self {
        match p {
            ProfileArg::Upstream => Self::Upstream,
            ProfileArg::Openshift => Self::OpenShift,
        }
    }
}

impl From<NfdLabelsArg> for crate::node::facts::NfdFlavour {
    fn from(f: NfdLabelsArg) -> Self {
        match f {
            NfdLabelsArg::Upstream => Self::Upstream,
            NfdLabelsArg::Openshift => Self::OpenShift,
        }
    }
}

/// `--pool NAME`: a name the MCO and a label key take, not a built-in
/// role's, as a usage error.
fn pool_name(s: &str) -> Result<String, String> {
    crate::cli::render::machineconfig::pool_name_problem(s).map_or_else(|| Ok(s.to_string()), Err)
}

/// `explain --pool NAME`: a pool's name, built-in roles' included.
fn pool_or_role_name(s: &str) -> Result<String, String> {
    match s {
        "worker" | "master" | "arbiter" => Ok(s.to_string()),
        _ => pool_name(s),
    }
}

/// `--kubelet-version 1.30`, as a usage error.
fn kubelet_version(s: &str) -> Result<crate::node::kubelet::version::KubeletVersion, String> {
    crate::node::kubelet::version::from_option(s)
}

/// `--set-env K=V`: as the service manager takes an assignment, as a usage
/// error.
fn manager_env_assignment(s: &str) -> Result<(String, String), String> {
    crate::cli::explain::manager_env_assignment(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_app() {
        Cmd::command().debug_assert()
    }

    /// Every visible command's help ends with examples and exit codes.
    #[test]
    fn every_command_has_examples_and_exit_status() {
        fn walk(cmd: &clap::Command, path: &str) {
            if cmd.is_hide_set() {
                return;
            }
            let after = cmd
                .get_after_help()
                .map(|s| s.to_string())
                .unwrap_or_default();
            assert!(after.starts_with("Examples:\n"), "{path}: no examples");
            assert!(after.contains("\nExit status: "), "{path}: no exit status");
            for line in after.lines() {
                assert!(
                    line.len() <= 80,
                    "{path}: help line over 80 columns: {line}"
                );
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()));
            }
        }
        walk(&Cmd::command(), "kubelet-labeler");
    }
}
