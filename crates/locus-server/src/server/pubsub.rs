//! Pub/sub: channels and patterns per tenant, and the inboxes messages are delivered to.
//!
//! ```text
//!  PUBLISH (under the engine lock, like every command)
//!    └─► registry: (tenant, channel) ─► subscribers   (tenant, pattern) ─► subscribers
//!          └─► each subscriber's inbox (bytes, framed in its own RESP version) + wake its task
//!  subscriber's task: a non-empty inbox ends its wait for input like a kill does; it moves the
//!  inbox into its output, after the replies of the batch it was running, and writes it out
//! ```
//!
//! A tenant's channels are its own: the registry keys every channel and pattern by tenant, so a
//! message published in one tenant reaches only that tenant's subscribers, and PUBSUB CHANNELS,
//! NUMSUB and NUMPAT count only the caller's tenant. An inbox is bounded by the `pubsub` class
//! of `client-output-buffer-limit` (hard limit: the subscriber is disconnected, as Redis does),
//! so a subscriber that stops reading cannot grow the server's memory.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use locus_engine::TenantId;
use locus_protocol::{ProtocolVersion, ReplyWriter};

use super::ClientInfo;
use crate::glob::glob_match;

/// Subscribers of one channel or pattern, in subscription order.
type Subscribers = Vec<Arc<ClientInfo>>;

/// The registry of every tenant's channel and pattern subscriptions.
#[derive(Debug, Default)]
pub struct PubSub {
    channels: HashMap<(u32, Vec<u8>), Subscribers>,
    patterns: HashMap<(u32, Vec<u8>), Subscribers>,
    /// Subscriptions (channels and patterns) per client id: whether it is in subscribed mode.
    per_client: HashMap<u64, usize>,
}

/// Channels or patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// SUBSCRIBE / UNSUBSCRIBE.
    Channel,
    /// PSUBSCRIBE / PUNSUBSCRIBE.
    Pattern,
}

impl PubSub {
    fn map(&mut self, kind: Kind) -> &mut HashMap<(u32, Vec<u8>), Subscribers> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
        }
    }

    /// Adds `client` to `name`'s subscribers (the caller checked it was not subscribed).
    pub fn subscribe(&mut self, kind: Kind, t: TenantId, name: &[u8], client: &Arc<ClientInfo>) {
        self.map(kind)
            .entry((t.0, name.to_vec()))
            .or_default()
            .push(client.clone());
        *self.per_client.entry(client.id).or_default() += 1;
    }

    /// The ids of the clients subscribed to any channel or pattern (CLIENT KILL TYPE pubsub).
    pub fn subscriber_ids(&self) -> std::collections::HashSet<u64> {
        self.channels
            .values()
            .chain(self.patterns.values())
            .flatten()
            .map(|c| c.id)
            .collect()
    }

    /// Removes client `id` from `name`'s subscribers.
    pub fn unsubscribe(&mut self, kind: Kind, t: TenantId, name: &[u8], id: u64) {
        let map = self.map(kind);
        let key = (t.0, name.to_vec());
        let mut gone = 0;
        if let Some(subs) = map.get_mut(&key) {
            let before = subs.len();
            subs.retain(|c| c.id != id);
            gone = before - subs.len();
            if subs.is_empty() {
                map.remove(&key);
            }
        }
        if gone > 0
            && let Some(n) = self.per_client.get_mut(&id)
        {
            *n = n.saturating_sub(gone);
            if *n == 0 {
                self.per_client.remove(&id);
            }
        }
    }

    /// Whether client `id` is subscribed to some channel or pattern (Redis's subscribed mode:
    /// a RESP2 redirect target of CLIENT TRACKING gets its invalidations only then).
    pub fn is_subscriber(&self, id: u64) -> bool {
        self.per_client.contains_key(&id)
    }

    /// Delivers `payload` on `channel` of tenant `t` to its subscribers and to the subscribers
    /// of the tenant's patterns that match it. Returns how many deliveries were made (PUBLISH's
    /// reply) and how many subscribers were disconnected for their output buffer limit.
    pub fn publish(
        &self,
        t: TenantId,
        channel: &[u8],
        payload: &[u8],
        hard_limit: u64,
    ) -> (usize, u64) {
        let (mut n, mut dropped) = (0, 0);
        if let Some(subs) = self.channels.get(&(t.0, channel.to_vec())) {
            for c in subs {
                dropped += u64::from(!c.deliver(hard_limit, |w| {
                    w.push(3);
                    w.bulk(b"message");
                    w.bulk(channel);
                    w.bulk(payload);
                }));
                n += 1;
            }
        }
        for ((pt, pattern), subs) in &self.patterns {
            if *pt != t.0 || !glob_match(pattern, channel, false) {
                continue;
            }
            for c in subs {
                dropped += u64::from(!c.deliver(hard_limit, |w| {
                    w.push(4);
                    w.bulk(b"pmessage");
                    w.bulk(pattern);
                    w.bulk(channel);
                    w.bulk(payload);
                }));
                n += 1;
            }
        }
        (n, dropped)
    }

    /// Tenant `t`'s channels with at least one subscriber, matching `pattern` if given.
    pub fn channels(&self, t: TenantId, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        let mut out: Vec<Vec<u8>> = self
            .channels
            .keys()
            .filter(|(ct, name)| *ct == t.0 && pattern.is_none_or(|p| glob_match(p, name, false)))
            .map(|(_, name)| name.clone())
            .collect();
        out.sort();
        out
    }

    /// Subscribers of tenant `t`'s channel `name`.
    pub fn numsub(&self, t: TenantId, name: &[u8]) -> usize {
        self.channels.get(&(t.0, name.to_vec())).map_or(0, Vec::len)
    }

    /// Distinct patterns tenant `t`'s clients are subscribed to.
    pub fn numpat(&self, t: TenantId) -> usize {
        self.patterns.keys().filter(|(pt, _)| *pt == t.0).count()
    }
}

impl ClientInfo {
    /// Appends one message, framed by `write` in this client's RESP version, to its inbox and
    /// wakes its task. Past `hard_limit` pending bytes (0: none) the client is disconnected
    /// instead, as Redis does with the pubsub output buffer limit: then false.
    pub(crate) fn deliver(
        &self,
        hard_limit: u64,
        write: impl FnOnce(&mut ReplyWriter<'_>),
    ) -> bool {
        if self.killed() {
            return true;
        }
        let proto = if self.resp.load(Ordering::Relaxed) == 3 {
            ProtocolVersion::Resp3
        } else {
            ProtocolVersion::Resp2
        };
        let over = {
            let mut inbox = self.inbox.lock();
            write(&mut ReplyWriter::new(&mut inbox, proto));
            self.inbox_pending.store(true, Ordering::SeqCst);
            // Pending output: the messages waiting here and the bytes being written now.
            let pending = inbox.len() as u64 + self.omem.load(Ordering::Relaxed);
            hard_limit > 0 && pending > hard_limit
        };
        if over {
            self.inbox.lock().clear();
            self.kill();
            return false;
        }
        if let Some(w) = self.waker.lock().as_ref() {
            w.wake_by_ref();
        }
        true
    }

    /// Moves the messages waiting in the inbox to the end of `out`. True when there were any.
    pub(crate) fn take_inbox(&self, out: &mut Vec<u8>) -> bool {
        if !self.inbox_pending.swap(false, Ordering::SeqCst) {
            return false;
        }
        let mut inbox = self.inbox.lock();
        out.extend_from_slice(&inbox);
        inbox.clear();
        if inbox.capacity() > 1 << 20 {
            inbox.shrink_to(0);
        }
        true
    }

    /// Whether messages wait in the inbox.
    pub(crate) fn inbox_pending(&self) -> bool {
        self.inbox_pending.load(Ordering::SeqCst)
    }
}
