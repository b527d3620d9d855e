//! `FUNCTION`: Redis 7's function libraries, implemented with the rest of scripting in
//! [`crate::exec::scripting::function`].

pub use crate::exec::scripting::function::function;
