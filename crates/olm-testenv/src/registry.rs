//! A local OCI registry: Debian's `docker-registry` with our own config on a free loopback port.
