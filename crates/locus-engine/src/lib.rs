//! The Locus cache engine: tenants, pools, size classes, pages, items, eviction, TTL, controller.
