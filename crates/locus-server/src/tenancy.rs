//! Tenant resolution: which tenant a connection, a key or a command belongs to.
//!
//! Built once from the configuration ([`Tenancy::new`]); read-only afterwards. See
//! `/work/coord/CONFIG.md` ("Tenancy semantics") for the rules per mode.

use std::collections::HashMap;

use locus_engine::TenantId;

use crate::config::{ServerConfig, TenancyMode};

/// The resolution tables.
#[derive(Debug, Clone)]
pub struct Tenancy {
    /// The configured mode.
    pub mode: TenancyMode,
    /// The fallback tenant (`tenancy.default_tenant`; the only tenant in single mode).
    pub default: Option<TenantId>,
    /// Tenant names in configuration order.
    pub names: Vec<(String, TenantId)>,
    /// User mode: user -> (password, tenant).
    pub users: HashMap<String, (String, TenantId)>,
    /// Db mode: db -> tenant.
    pub dbs: HashMap<u32, TenantId>,
    /// Prefix mode: (prefix, tenant), longest first.
    pub prefixes: Vec<(Vec<u8>, TenantId)>,
    /// The `[admin]` user and password, if configured.
    pub admin: Option<(String, String)>,
    /// Port mode: the password of each tenant that has one (its port then requires AUTH).
    pub port_passwords: HashMap<TenantId, String>,
}

impl Tenancy {
    /// Builds the tables; `ids` are the engine ids of `cfg.tenant_sections()`, in order.
    pub fn new(cfg: &ServerConfig, ids: &[TenantId]) -> Self {
        let sections = cfg.tenant_sections();
        let mut t = Tenancy {
            mode: cfg.tenancy.mode,
            default: None,
            names: Vec::new(),
            users: HashMap::new(),
            dbs: HashMap::new(),
            prefixes: Vec::new(),
            admin: (!cfg.admin.user.is_empty())
                .then(|| (cfg.admin.user.clone(), cfg.admin.password.clone())),
            port_passwords: HashMap::new(),
        };
        for (s, &id) in sections.iter().zip(ids) {
            t.names.push((s.name.clone(), id));
            if let (Some(u), Some(p)) = (&s.user, &s.password) {
                t.users.insert(u.clone(), (p.clone(), id));
            }
            if let Some(db) = s.db {
                t.dbs.insert(db, id);
            }
            if let Some(p) = &s.prefix {
                t.prefixes.push((p.as_bytes().to_vec(), id));
            }
            if s.name == cfg.tenancy.default_tenant {
                t.default = Some(id);
            }
            if t.mode == TenancyMode::Port
                && let Some(p) = &s.password
            {
                t.port_passwords.insert(id, p.clone());
            }
        }
        if t.mode == TenancyMode::Single {
            t.default = ids.first().copied();
        }
        t.prefixes.sort_by_key(|p| std::cmp::Reverse(p.0.len()));
        t
    }

    /// The tenant's name.
    pub fn name(&self, id: TenantId) -> &str {
        self.names
            .iter()
            .find(|(_, i)| *i == id)
            .map_or("?", |(n, _)| n.as_str())
    }

    /// A tenant by name.
    pub fn by_name(&self, name: &str) -> Option<TenantId> {
        self.names.iter().find(|(n, _)| n == name).map(|(_, i)| *i)
    }

    /// Port mode: the tenant a connection on `listener_tenant`'s listener routes to (the
    /// default tenant on the server's own port) with its password, when it has one: such a
    /// connection must AUTH with it before its first command, as with `requirepass`.
    pub fn port_password(&self, listener_tenant: Option<TenantId>) -> Option<(TenantId, &str)> {
        if self.mode != TenancyMode::Port {
            return None;
        }
        let t = listener_tenant.or(self.default)?;
        self.port_passwords.get(&t).map(|p| (t, p.as_str()))
    }

    /// Prefix mode: the tenant owning `key` (longest prefix), else the default tenant.
    pub fn for_key(&self, key: &[u8]) -> Option<TenantId> {
        self.prefixes
            .iter()
            .find(|(p, _)| key.starts_with(p))
            .map(|(_, id)| *id)
            .or(self.default)
    }

    /// Whether a connection administers the server before (or without) authenticating as the
    /// admin: only a single-tenant server without an `[admin]` user, as Redis.
    pub fn admin_by_default(&self) -> bool {
        self.mode == TenancyMode::Single && self.admin.is_none()
    }

    /// The tenant a new connection is bound to before AUTH: its only tenant (single mode) or its
    /// listener's (port mode); in user, db and prefix mode, none until it authenticates as a
    /// tenant's user.
    pub fn initial_owner(&self, listener_tenant: Option<TenantId>) -> Option<TenantId> {
        match self.mode {
            TenancyMode::Single => self.default,
            TenancyMode::Port => listener_tenant.or(self.default),
            _ => None,
        }
    }

    /// The database number of tenant `t` (db mode).
    pub fn db_of(&self, t: TenantId) -> Option<u32> {
        self.dbs.iter().find(|(_, id)| **id == t).map(|(db, _)| *db)
    }

    /// The tenant a new connection starts with (before AUTH/SELECT).
    pub fn initial(&self, listener_tenant: Option<TenantId>) -> Option<TenantId> {
        match self.mode {
            TenancyMode::Port => listener_tenant.or(self.default),
            TenancyMode::Db => self.dbs.get(&0).copied(),
            _ => self.default,
        }
    }
}
