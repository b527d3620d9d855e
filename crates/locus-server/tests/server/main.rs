//! In-process server tests: the server runs on port 0 with a virtual clock; tests send raw bytes
//! and assert the exact reply bytes.
//!
//! * `table`: one table of (request, expected reply) pairs run against every configuration
//!   (RESP2, RESP3, and each tenancy mode).
//! * `tenants`: isolation between tenants in port/user/db/prefix modes; runtime tenant settings.
//! * `behaviour`: TTL on the virtual clock, pipelining, inline commands, limits, CONFIG, INFO.
//! * `malformed`: protocol errors, huge declared sizes, garbage; the server keeps serving.

mod behaviour;
mod common;
mod malformed;
mod redis_peer;
mod robustness;
mod table;
mod tenants;
