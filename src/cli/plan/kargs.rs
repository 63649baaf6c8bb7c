//! Kernel arguments that can keep kubelet from starting at boot
//! ([`boot_changing`]): an allow-list of keys, each with the value shapes
//! plan takes (review 29 r29a F4: `pci=off`, `hugepages=100000000` passed
//! by their key), and of module parameters whose module is a kernel one
//! (`mount.usr=`, `udev.blockdev_read_only`, `fsck.repair=` are systemd's
//! and udev's own, not a module's).

/// The characters plan takes in a kernel argument besides ASCII letters
/// and digits: none GRUB's script reads as its own (`;`, `$`, `|`, `#`,
/// quotes of its own, ...: review 33 r33a F3, review 34 r34a F4). `"`
/// only in pairs; a space only within them (`split_kargs`).
const KARG_CHARS: &str = "-_.,:=/+@%~\" ";

/// Why a kernel argument changes which units start, runs another program
/// as root at boot, or may keep the node from booting (None: plan takes
/// it as leaving kubelet's start as it is). systemd reads `-` and `_` in a
/// key alike, and so does the kernel in a module's parameter.
pub fn boot_changing(arg: &str) -> Option<String> {
    // The kernel splits at byte 0xA0 too, and reads bytes, not UTF-8
    // (review 27 r27a F3: `nosmtĠrdinit=/bin/sh` is one word to a UTF-8
    // reader and two to the kernel).
    if arg.bytes().any(|b| !(0x20..0x7f).contains(&b)) {
        return Some("it holds a byte the kernel may read otherwise (it splits at 0xA0)".into());
    }
    // RHCOS's GRUB pastes the boot entry's options into its script (review
    // 33 r33a F3: `nvidia.NVreg_EnableGpuFirmware=0;halt` ended the `linux`
    // line and ran `halt` in GRUB 2.06's engine before the kernel booted).
    let odd_quotes = arg.matches('"').count() % 2 == 1;
    if let Some(c) = (arg.chars())
        .find(|c| !c.is_ascii_alphanumeric() && !KARG_CHARS.contains(*c))
        .or(odd_quotes.then_some('"'))
    {
        return Some(format!(
            "it holds `{c}`{}, which GRUB's script may read as its own (the node's GRUB pastes \
             kernel arguments into its script, where `;` ends the kernel's line and runs what \
             follows, and a lone `\"` keeps the kernel from loading); plan takes letters, \
             digits, `-_.,:=/+@%~` and `\"` in pairs",
            if c == '"' { " unpaired" } else { "" }
        ));
    }
    let arg = arg.replace('"', "");
    // The kernel hands a word it does not take, without `=` or `.`, to
    // init as an argument, and every word after `--` (review 26 r26a F2):
    // systemd reads `--unit=`, `--crash-shell`... there.
    if arg.starts_with('-') {
        return Some("the kernel hands it to systemd (init) as a command-line option".into());
    }
    if matches!(
        arg.as_str(),
        "emergency" | "rescue" | "single" | "s" | "S" | "-b" | "1" | "2" | "3" | "4" | "5"
    ) {
        return Some("it boots another target than the default".into());
    }
    let (key, value) = arg
        .split_once('=')
        .map_or((arg.as_str(), None), |(k, v)| (k, Some(v)));
    let key = key.replace('-', "_");
    let why = match key.as_str() {
        "init" | "rdinit" => "it runs another program as init",
        "root" | "rootflags" | "rootfstype" | "ostree" | "mem" | "memmap" | "panic"
        | "module_blacklist" | "modprobe.blacklist" | "initcall_blacklist" => {
            "it changes what the kernel boots, mounts or loads"
        }
        "systemd.unit" | "rd.systemd.unit" => "it boots another target than the default",
        "systemd.mask" => "it masks a unit at boot",
        "systemd.wants"
        | "systemd.run"
        | "systemd.run_success_action"
        | "systemd.run_failure_action" => "it starts another unit or command at boot",
        "systemd.debug_shell"
        | "systemd.crash_shell"
        | "rd.shell"
        | "rd.break"
        | "rd.emergency" => "it gives a root shell or stops the boot at one",
        "systemd.confirm_spawn" => "systemd asks on the console before starting each unit",
        "systemd.setenv"
        | "systemd.set_credential"
        | "systemd.set_credential_binary"
        | "systemd.import_credentials" => "it sets what every unit starts with",
        "systemd.mount_extra" | "systemd.swap_extra" | "systemd.volatile" => {
            "it changes what is mounted at boot"
        }
        "systemd.firstboot" | "systemd.condition_first_boot" | "systemd.condition_needs_update" => {
            "it changes which units' conditions hold"
        }
        "systemd.default_timeout_start_sec" => "it changes how long a unit may take to start",
        "systemd.unified_cgroup_hierarchy" | "systemd.legacy_systemd_cgroup_controller" => {
            "it changes the cgroup version, which kubelet may refuse"
        }
        k if k.starts_with("rd.systemd.") => "it changes which units the initramfs starts",
        // systemd's own that only change its logging.
        k if systemd_logging(k) => return None,
        k if k.starts_with("systemd.") => {
            "systemd reads it at boot, and plan cannot tell what it does to kubelet's start"
        }
        k if k.starts_with("ignition.") => "Ignition reads it at boot",
        // The unlocking of an encrypted root (review 31 r31b F3: a
        // `rd.luks.uuid=` of no disk keeps the boot waiting): set at
        // install, not by a pool's change.
        k if k.starts_with("rd.luks.") => {
            "the initramfs unlocks the disks it names, and waits for them, before the root mounts"
        }
        // The initramfs's and the module loader's (`rd.driver.blacklist=`
        // is dracut's `module_blacklist=`; review 28 r28a F4).
        k if k.starts_with("rd.") => {
            "the initramfs reads it, and plan cannot tell what it does to the boot"
        }
        k if k.starts_with("modprobe.") || k.starts_with("module.") => {
            "it changes which kernel modules load"
        }
        k if k.contains('.') => return module_parameter(k),
        k => return kernel_own(k, value, &arg),
    };
    Some(why.into())
}

/// Prefixes of dotted keys that programs at boot read as their own, not a
/// kernel module's parameter (`mount.usr=` is systemd-fstab-generator's;
/// the kernel, finding no module `mount`, leaves it to them). Sources:
/// systemd 252's kernel-command-line(7) and the keys in the strings of its
/// binaries and generators (`systemd-fstab-generator`: `mount.usr`,
/// `mount.usrfstype`, `mount.usrflags`; `systemd-fsck`: `fsck.mode`,
/// `fsck.repair`; `systemd-cryptsetup-generator`: `luks.*`; udev's
/// `udev.*` and `net.ifnames`, `net.naming_scheme`; `quotacheck.mode`,
/// `vconsole.*`, `locale.*`, `plymouth.enable`), dracut.cmdline(7) (`rd.*`,
/// `plymouth.*`, `vconsole.*`, `locale.*`, `resume`), Ignition's
/// `ignition.*`, CoreOS's `coreos.*` (coreos-installer, the live ISO) and
/// ostree-prepare-root's `ostree.*`; and the kernel's own `sysctl.*`, which
/// sets the sysctl it names at boot (`sysctl.vm.nr_hugepages=`).
const NOT_MODULES: [(&str, &str); 18] = [
    ("systemd", "systemd"),
    ("rd", "the initramfs (dracut, systemd)"),
    ("udev", "udev"),
    ("net", "udev (the network interfaces' names)"),
    ("mount", "systemd-fstab-generator (the /usr mount)"),
    ("fsck", "systemd-fsck"),
    ("luks", "systemd-cryptsetup-generator"),
    ("resume", "systemd's and dracut's resume from hibernation"),
    ("quotacheck", "systemd-quotacheck"),
    ("vconsole", "systemd-vconsole-setup"),
    ("locale", "systemd (the locale of every unit)"),
    ("plymouth", "plymouth and the initramfs"),
    ("ignition", "Ignition"),
    ("coreos", "CoreOS's initramfs and coreos-installer"),
    ("ostree", "ostree-prepare-root (the root mount)"),
    (
        "sysctl",
        "the kernel, which sets the sysctl it names at boot",
    ),
    ("module", "the kernel's module loader"),
    ("modprobe", "modprobe"),
];

/// The modules whose parameters plan accepts, with any value: GPU
/// drivers, device passthrough and virtualization, and the CPU idle and
/// RCU tuning performance profiles set (`intel_idle.max_cstate=0`,
/// `rcupdate.rcu_normal_after_boot=1`, `tuned.non_isolcpus=`). Another
/// module's parameter may keep the root disk or the network from coming up.
const MODULES: [&str; 22] = [
    "nvidia",
    "nvidia_drm",
    "nvidia_modeset",
    "nvidia_uvm",
    "nvidia_peermem",
    "nouveau",
    "i915",
    "xe",
    "amdgpu",
    "radeon",
    "vfio",
    "vfio_pci",
    "vfio_iommu_type1",
    "kvm",
    "kvm_intel",
    "kvm_amd",
    "intel_idle",
    "processor",
    "rcupdate",
    "rcutree",
    "tuned",
    "workqueue",
];

/// A module's own parameter (`i915.enable_guc=0`): the module's, when the
/// key has a module's shape (`[a-z0-9_]+.[A-Za-z0-9_]+`, `-` read as `_`)
/// and no program at boot reads the prefix as its own ([`NOT_MODULES`]).
fn module_parameter(key: &str) -> Option<String> {
    let (module, param) = key.split_once('.').unwrap_or((key, ""));
    if let Some((_, who)) = NOT_MODULES.iter().find(|(m, _)| *m == module) {
        return Some(format!(
            "`{module}.` keys are read at boot by {who}, not a kernel module's parameters"
        ));
    }
    let module_shape = !module.is_empty()
        && (module.bytes()).all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    let param_shape =
        !param.is_empty() && (param.bytes()).all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if module_shape && param_shape && MODULES.contains(&module) {
        return None;
    }
    if module_shape && param_shape {
        return Some(format!(
            "a parameter of module {module}, which plan does not judge (a storage or network \
             module's, `scsi_mod.scan=none`, `libata.force=disable`, can keep the root disk or \
             the network from coming up; review 31 r31b F3): plan judges those of GPU, \
             passthrough, virtualization and CPU tuning modules only"
        ));
    }
    Some(format!(
        "{key} is not a module's parameter's shape (module.parameter, of [a-z0-9_]), \
         and plan cannot tell what reads it at boot"
    ))
}

/// systemd's kernel arguments (`-` read as `_`) that change only what it
/// logs and shows.
fn systemd_logging(key: &str) -> bool {
    let Some(k) = key.strip_prefix("systemd.") else {
        return false;
    };
    k.starts_with("log_")
        || k.starts_with("journald.")
        || matches!(
            k,
            "show_status"
                | "status_unit_format"
                | "default_standard_output"
                | "default_standard_error"
        )
}

/// The value shapes plan takes for a kernel argument of [`KERNEL_ARGS`].
#[derive(Clone, Copy)]
enum Shape {
    /// No value.
    Flag,
    /// No value, or one of these.
    FlagOr(&'static [&'static str]),
    /// One of these.
    OneOf(&'static [&'static str]),
    /// A comma-separated list of these.
    ListOf(&'static [&'static str]),
    /// A CPU list (`0-3,8,10-15:2/4`), after these flags (`isolcpus=`).
    Cpus(&'static [&'static str]),
    /// No value, or a CPU list (`rcu_nocbs`).
    FlagOrCpus,
    /// A number up to this.
    UpTo(u64),
    /// A count of huge pages (`N` or `node:N,...`), see [`HUGEPAGES_MAX`].
    HugePages,
    /// `crashkernel=`: a size, `SIZE,high|low` or `RANGE:SIZE,...`, each
    /// size up to [`CRASHKERNEL_MAX`].
    CrashKernel,
    /// A serial or virtual console (`ttyS0,115200n8`, `tty0`, `hvc0`).
    Console,
}

/// Huge page sizes plan takes (x86_64's; the kernel ignores another).
const HUGEPAGE_SIZES: &[&str] = &["2M", "1G", "2m", "1g"];

/// The kernel's own arguments (no `.`) plan takes as leaving kubelet's
/// start as it is, with the values it takes: CPU, memory, IOMMU and tuning
/// ones that OpenShift's performance profiles and GPU setups set. Any other
/// key (review 28 r28a F4: `cgroup_disable=memory`, `noinitrd`), or value
/// (review 29 r29a F4: `pci=off` probes no PCI bus, so no root disk and no
/// NIC; `pcie_aspm=force` may lock the machine up) is refused: review it by
/// hand. Values are the kernel's admin-guide/kernel-parameters.
const KERNEL_ARGS: [(&str, Shape); 40] = [
    ("nosmt", Shape::FlagOr(&["force"])),
    ("hugepages", Shape::HugePages),
    ("hugepagesz", Shape::OneOf(HUGEPAGE_SIZES)),
    ("default_hugepagesz", Shape::OneOf(HUGEPAGE_SIZES)),
    ("isolcpus", Shape::Cpus(&["nohz", "domain", "managed_irq"])),
    ("nohz", Shape::OneOf(&["on", "off"])),
    ("nohz_full", Shape::Cpus(&[])),
    ("rcu_nocbs", Shape::FlagOrCpus),
    ("rcu_nocb_poll", Shape::Flag),
    ("irqaffinity", Shape::Cpus(&[])),
    ("skew_tick", Shape::OneOf(&["0", "1"])),
    (
        "tsc",
        Shape::OneOf(&[
            "reliable",
            "noirqtime",
            "unstable",
            "nowatchdog",
            "recalibrate",
            "watchdog",
        ]),
    ),
    ("nmi_watchdog", Shape::OneOf(&["0", "1"])),
    ("nosoftlockup", Shape::Flag),
    ("idle", Shape::OneOf(&["poll", "halt", "nomwait"])),
    (
        "intel_pstate",
        Shape::OneOf(&[
            "disable",
            "active",
            "passive",
            "no_hwp",
            "hwp_only",
            "force",
            "per_cpu_perf_limits",
        ]),
    ),
    (
        "amd_pstate",
        Shape::OneOf(&["disable", "passive", "active", "guided"]),
    ),
    (
        "intel_iommu",
        Shape::ListOf(&["on", "off", "igfx_off", "sm_on", "sm_off", "strict"]),
    ),
    (
        "amd_iommu",
        Shape::ListOf(&[
            "off",
            "fullflush",
            "force_isolation",
            "pgtbl_v1",
            "pgtbl_v2",
        ]),
    ),
    ("iommu", Shape::OneOf(&["pt", "nopt", "soft", "off"])),
    ("pcie_aspm", Shape::OneOf(&["off"])),
    (
        "pci",
        Shape::ListOf(&[
            "realloc",
            "realloc=on",
            "realloc=off",
            "noaer",
            "pcie_bus_tune_off",
            "pcie_bus_safe",
            "pcie_bus_perf",
            "pcie_bus_peer2peer",
        ]),
    ),
    ("audit", Shape::OneOf(&["0", "1", "off", "on"])),
    // The kernel's default is 64; guides set 8192 and up. Each queued
    // record holds up to about 9 KiB, so 65536 is at most about 600 MiB.
    ("audit_backlog_limit", Shape::UpTo(65536)),
    ("mitigations", Shape::OneOf(&["off", "auto", "auto,nosmt"])),
    (
        "spectre_v2",
        Shape::OneOf(&[
            "on",
            "off",
            "auto",
            "retpoline",
            "retpoline,generic",
            "retpoline,lfence",
            "retpoline,amd",
            "eibrs",
            "eibrs,retpoline",
            "eibrs,lfence",
            "ibrs",
        ]),
    ),
    ("tsx", Shape::OneOf(&["on", "off", "auto"])),
    (
        "transparent_hugepage",
        Shape::OneOf(&["always", "madvise", "never"]),
    ),
    ("numa_balancing", Shape::OneOf(&["enable", "disable"])),
    ("psi", Shape::OneOf(&["0", "1"])),
    ("crashkernel", Shape::CrashKernel),
    ("console", Shape::Console),
    (
        "loglevel",
        Shape::OneOf(&["0", "1", "2", "3", "4", "5", "6", "7"]),
    ),
    ("quiet", Shape::Flag),
    ("ignore_loglevel", Shape::Flag),
    (
        "earlyprintk",
        Shape::OneOf(&[
            "vga",
            "efi",
            "vga,keep",
            "efi,keep",
            "ttyS0,115200",
            "ttyS1,115200",
        ]),
    ),
    ("selinux", Shape::OneOf(&["0", "1"])),
    ("enforcing", Shape::OneOf(&["0", "1"])),
    ("kthread_cpus", Shape::Cpus(&[])),
    ("nowatchdog", Shape::Flag),
];

/// The most huge pages one `hugepages=` may reserve in all, and the pool's
/// kernel arguments together ([`hugepages_over`]): 64 GiB. plan does not
/// know the nodes' memory; a reservation the size of it leaves the kernel,
/// init and kubelet none (OOM at boot). 64 GiB is half of a 128 GiB node,
/// a small GPU node; performance profiles reserve a few GiB to a few tens.
/// A larger reservation is reviewed by hand.
pub const HUGEPAGES_MAX: u64 = 64 << 30;

/// The most one `crashkernel=` size may reserve: 2 GiB, four times RHEL 9's
/// largest default (`64G-:512M`); the memory is lost to the running system.
const CRASHKERNEL_MAX: u64 = 2 << 30;

/// Whether `value` is one of [`KERNEL_ARGS`]'s shapes for `key` (None: it
/// is), else why not.
fn kernel_own(key: &str, value: Option<&str>, arg: &str) -> Option<String> {
    let Some((_, shape)) = KERNEL_ARGS.iter().find(|(k, _)| *k == key) else {
        return Some("plan knows no such kernel argument to leave kubelet's start as it is".into());
    };
    let one_of = |set: &[&str], v: &str| set.contains(&v);
    let (ok, takes): (bool, String) = match (*shape, value) {
        (Shape::Flag, v) => (v.is_none(), "without a value".into()),
        (Shape::FlagOr(set), v) => (
            v.is_none_or(|v| one_of(set, v)),
            format!("without a value or as {}", set.join(", ")),
        ),
        (Shape::OneOf(set), v) => (
            v.is_some_and(|v| one_of(set, v)),
            format!("as one of {}", set.join(" | ")),
        ),
        (Shape::ListOf(set), v) => (
            v.is_some_and(|v| v.split(',').all(|w| one_of(set, w))),
            format!("as a comma-separated list of {}", set.join(", ")),
        ),
        (Shape::Cpus(flags), v) => (
            v.is_some_and(|v| cpu_list(v, flags)),
            "with a CPU list (0-3,8)".into(),
        ),
        (Shape::FlagOrCpus, v) => (
            v.is_none_or(|v| cpu_list(v, &[])),
            "without a value or with a CPU list (0-3,8)".into(),
        ),
        (Shape::UpTo(max), v) => (
            v.and_then(number).is_some_and(|n| n <= max),
            format!("with a number up to {max}"),
        ),
        (Shape::HugePages, v) => (
            // Each page is 2 MiB or more (x86_64's smallest).
            (v.and_then(hugepage_count))
                .is_some_and(|n| n.saturating_mul(2 << 20) <= HUGEPAGES_MAX),
            format!(
                "with a count (N or node:N,...) of up to {} GiB in 2M pages",
                HUGEPAGES_MAX >> 30
            ),
        ),
        (Shape::CrashKernel, v) => (
            v.is_some_and(crash_kernel),
            format!(
                "as SIZE, SIZE,high, SIZE,low or RANGE:SIZE,... with each SIZE up to {} GiB",
                CRASHKERNEL_MAX >> 30
            ),
        ),
        (Shape::Console, v) => (
            v.is_some_and(console),
            "as tty<N>, ttyS<N>, ttyAMA<N> or hvc<N>, with an optional ,BAUD[noe][5-8][r]".into(),
        ),
    };
    (!ok).then(|| {
        format!(
            "plan takes {key} only {takes}, and cannot tell what {arg} does to the boot; \
             apply it outside plan (a change of its own, reviewed by hand)"
        )
    })
}

/// A decimal number the kernel reads (no sign, no suffix).
fn number(v: &str) -> Option<u64> {
    (!v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        .then(|| v.parse().ok())
        .flatten()
}

/// A size as the kernel's `memparse` reads it (`256M`, `1G`, `4096`).
fn size(v: &str) -> Option<u64> {
    let (digits, shift) = match v.as_bytes().last()? {
        b'K' | b'k' => (&v[..v.len() - 1], 10),
        b'M' | b'm' => (&v[..v.len() - 1], 20),
        b'G' | b'g' => (&v[..v.len() - 1], 30),
        b'T' | b't' => (&v[..v.len() - 1], 40),
        _ => (v, 0),
    };
    number(digits)?.checked_mul(1 << shift)
}

/// A `hugepages=` count: `N`, or per NUMA node `node:N,...` (their sum).
fn hugepage_count(v: &str) -> Option<u64> {
    if !v.contains(':') {
        return number(v);
    }
    v.split(',').try_fold(0u64, |sum, part| {
        let (node, n) = part.split_once(':')?;
        number(node)?;
        sum.checked_add(number(n)?)
    })
}

/// A CPU list (`0-3,8,10-15:2/4`, `N` for the last CPU) after any of
/// `flags` (`isolcpus=managed_irq,domain,2-5`).
fn cpu_list(v: &str, flags: &[&str]) -> bool {
    // x86_64's most CPUs (NR_CPUS).
    let cpu = |c: &str| c == "N" || number(c).is_some_and(|n| n < 8192);
    let mut items = v.split(',').skip_while(|w| flags.contains(w)).peekable();
    items.peek().is_some()
        && items.all(|item| {
            let (range, stride) = item.split_once(':').unwrap_or((item, "1/1"));
            let (a, b) = range.split_once('-').unwrap_or((range, range));
            let (used, group) = stride.split_once('/').unwrap_or(("", ""));
            cpu(a) && cpu(b) && number(used).is_some() && number(group).is_some_and(|g| g > 0)
        })
}

/// `crashkernel=` as the kernel reads it, each size up to
/// [`CRASHKERNEL_MAX`].
fn crash_kernel(v: &str) -> bool {
    let small = |s: &str| size(s).is_some_and(|n| n > 0 && n <= CRASHKERNEL_MAX);
    if let Some(s) = v.strip_suffix(",high").or(v.strip_suffix(",low")) {
        return small(s);
    }
    if !v.contains(':') {
        return small(v);
    }
    v.split(',').all(|part| {
        let Some((range, s)) = part.split_once(':') else {
            return false;
        };
        let Some((from, to)) = range.split_once('-') else {
            return false;
        };
        size(from).is_some() && (to.is_empty() || size(to).is_some()) && small(s)
    })
}

/// A console the kernel writes to: `tty<N>`, `ttyS<N>`, `ttyAMA<N>`,
/// `hvc<N>`, with an optional `,BAUD[parity][bits][r]` (`ttyS0,115200n8`).
fn console(v: &str) -> bool {
    let (name, options) = v.split_once(',').unwrap_or((v, ""));
    let named = ["ttyAMA", "ttyS", "hvc", "tty"]
        .iter()
        .find_map(|p| name.strip_prefix(p))
        .is_some_and(|n| number(n).is_some_and(|n| n < 64));
    let baud_len = options.bytes().take_while(u8::is_ascii_digit).count();
    let rest = &options[baud_len..];
    let rest = rest.strip_prefix(['n', 'o', 'e']).unwrap_or(rest);
    let rest = rest.strip_prefix(['5', '6', '7', '8']).unwrap_or(rest);
    let rest = rest.strip_prefix('r').unwrap_or(rest);
    named && (options.is_empty() || (baud_len > 0 && rest.is_empty()))
}

/// Why the huge pages `args` reserve in all (a pool's kernel arguments, in
/// the order the MCO writes them) are more than [`HUGEPAGES_MAX`] (None:
/// they are not). A `hugepages=` counts pages of the `hugepagesz=` before
/// it, else of the default size: 2M, or the largest `default_hugepagesz=`
/// or earlier `hugepagesz=` of the arguments, whichever is larger (plan
/// takes the larger where the kernel's reading depends on order).
pub fn hugepages_over<'a>(args: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let kv = |a: &str| {
        let a = a.replace('"', "");
        let (k, v) = a.split_once('=')?;
        Some((k.replace('-', "_"), v.to_string()))
    };
    let args: Vec<(String, String)> = args.into_iter().filter_map(kv).collect();
    let mut default = 2u64 << 20;
    for (k, v) in &args {
        if k == "default_hugepagesz" {
            default = default.max(size(v).unwrap_or(0));
        }
    }
    let (mut total, mut pending, mut last) = (0u128, None, 0u64);
    for (k, v) in &args {
        match k.as_str() {
            "hugepagesz" => {
                let s = size(v).unwrap_or(0);
                (pending, last) = (Some(s), last.max(s));
            }
            "hugepages" => {
                let count = hugepage_count(v).unwrap_or(u64::MAX);
                let s = pending.take().unwrap_or(default.max(last));
                total = total.saturating_add(u128::from(count) * u128::from(s));
            }
            _ => {}
        }
    }
    (total > u128::from(HUGEPAGES_MAX)).then(|| {
        format!(
            "the pool's hugepages= reserve {} GiB in all (each count times its hugepagesz=, \
             else the default size), more than the {} GiB plan takes without the nodes' memory: \
             huge pages the size of a node's memory leave init and kubelet none at boot",
            total >> 30,
            HUGEPAGES_MAX >> 30
        )
    })
}

/// Kernel arguments as the MCO's daemon splits an entry: on whitespace,
/// not within double quotes.
pub fn split_kargs(entry: &str) -> Vec<String> {
    let (mut out, mut word, mut quoted) = (Vec::new(), String::new(), false);
    for c in entry.chars() {
        if c == '"' {
            quoted = !quoted;
        }
        if c.is_whitespace() && !quoted {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
        } else {
            word.push(c);
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

#[cfg(test)]
#[path = "kargs_tests.rs"]
mod tests;
