//! Locus network server: listeners, connections, tenant resolution, command execution, INFO, config.
