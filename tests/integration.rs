//! The integration tests: one test binary (as ripgrep keeps its own), one
//! module per area, and the helpers they share in `support`. Each runs the
//! built programs in scratch directories, most against a real program (see
//! docs/testing.md). `cargo test --test integration render::` runs one area.

mod support;

mod boot_reads;
mod cli;
mod cli_docs;
mod completions;
mod compose;
mod docs_releases;
mod example_rules;
mod explain_command_line;
mod explain_machineconfig;
mod explain_pool;
mod facts;
mod fail_closed;
mod gunzip_go;
mod house;
mod ignition_check;
mod install;
mod io_safety;
mod iso;
mod iso_fleet;
mod kubelet_bool_flags;
mod kubelet_config_oracle;
mod kubelet_mco;
mod kubelet_validate_cli;
mod leave_to_nfd;
mod mco_disruption;
mod nfd_differential;
mod nfd_worker_diff;
mod one_binary;
mod payload;
mod plan;
mod plan_fleet;
mod plan_tolerations;
mod preflight;
mod readme;
mod real_chain;
mod real_policy_apply;
mod real_sync;
mod real_validate;
mod render;
mod render_flags;
mod render_gitops;
mod render_goyaml;
mod render_pointer;
mod render_policy;
mod render_review;
mod render_root;
mod rerender;
mod rules_budget;
mod rules_go_oracle;
mod rules_systemd_e2e;
mod scripts_target_dir;
mod static_cli;
mod sync_transport;
mod tools_listed;
mod unit_systemd_diff;
mod value_forms;
mod wrapper_faults;
mod wrapper_systemd_e2e;
