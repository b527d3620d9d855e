//! The engine's typed errors.

/// Everything an engine call can refuse.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum EngineError {
    /// key + value + item header is larger than one page: the item can never be stored.
    #[error(
        "item too large: {size} bytes (key + value + header) exceeds the largest chunk of {max} bytes (one page)"
    )]
    ItemTooLarge {
        /// Bytes the item would need (key + value + header).
        size: u64,
        /// The largest storable item (the page size, or with large items `maxmemory` up to
        /// 2 GiB).
        max: u64,
    },
    /// Memory is full and nothing may be evicted (noeviction, a volatile policy without TTL
    /// keys, or a budget that leaves no room): Redis's OOM error.
    #[error("OOM command not allowed when used memory > 'maxmemory'")]
    OutOfMemory,
    /// No tenant of that name.
    #[error("unknown tenant {name:?}")]
    UnknownTenant {
        /// The name asked for.
        name: String,
    },
    /// A tenant of that name exists already.
    #[error("duplicate tenant {name:?}")]
    DuplicateTenant {
        /// The name given twice.
        name: String,
    },
    /// The key holds a value of another type (a string where an object is asked for, or the
    /// reverse): Redis's WRONGTYPE.
    #[error("WRONGTYPE Operation against a key holding the wrong kind of value")]
    WrongType,
    /// The key does not exist (RENAME of a missing key).
    #[error("no such key")]
    NoSuchKey,
    /// A configuration (or runtime setting) was rejected; every problem is listed.
    #[error("invalid configuration: {}", problems.join("; "))]
    InvalidConfig {
        /// One line per problem, each naming its key.
        problems: Vec<String>,
    },
    /// A controller could not be built (unknown name, bad setting).
    #[error(transparent)]
    Control(#[from] crate::control::ControlError),
    /// `move_page` (or another page call) named a pool that does not exist.
    #[error("unknown pool {pool}")]
    UnknownPool {
        /// The pool number asked for.
        pool: u32,
    },
    /// `move_page` named a size class that does not exist.
    #[error("unknown size class {class}")]
    UnknownClass {
        /// The class number asked for.
        class: u16,
    },
    /// `move_page` was asked to take a page from a (pool, class) that owns none.
    #[error("pool {pool} class {class} owns no page to move")]
    NoPageToMove {
        /// The source pool.
        pool: u32,
        /// The source class.
        class: u16,
    },
}
