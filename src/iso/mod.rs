//! CoreOS live ISO Ignition embedding, compatible with coreos-installer.
