//! Size classes: chunk sizes growing by `slab_growth_factor` from `min_chunk` up to one page.

use crate::ids::ClassId;

/// Chunks are multiples of this many bytes (keeps headers aligned).
pub(crate) const CHUNK_ALIGN: u64 = 8;

/// The table of size classes shared by every pool.
#[derive(Debug, Clone)]
pub(crate) struct SizeClasses {
    /// Chunk size of each class, strictly increasing; the last one is the page size.
    chunk: Vec<u32>,
    /// Chunks per page for each class.
    slots: Vec<u32>,
}

fn align_up(x: u64) -> u64 {
    x.div_ceil(CHUNK_ALIGN) * CHUNK_ALIGN
}

impl SizeClasses {
    /// Builds the classes. Inputs are validated by `EngineConfig::validate`.
    pub(crate) fn new(min_chunk: u32, factor: f64, page_size: u64) -> Self {
        let mut chunk = Vec::new();
        let mut c = align_up(u64::from(min_chunk)).min(page_size);
        loop {
            if c >= page_size {
                chunk.push(page_size as u32);
                break;
            }
            chunk.push(c as u32);
            let next = align_up((c as f64 * factor).ceil() as u64).max(c + CHUNK_ALIGN);
            c = next;
        }
        let slots = chunk
            .iter()
            .map(|&c| (page_size / u64::from(c)) as u32)
            .collect();
        Self { chunk, slots }
    }

    /// Number of classes.
    pub(crate) fn len(&self) -> usize {
        self.chunk.len()
    }

    /// The chunk size of `c`.
    #[inline]
    pub(crate) fn chunk(&self, c: u16) -> u32 {
        self.chunk[c as usize]
    }

    /// Chunks per page of `c`.
    #[inline]
    pub(crate) fn slots(&self, c: u16) -> u32 {
        self.slots[c as usize]
    }

    /// The smallest class whose chunk holds `bytes`, or None when larger than a page.
    #[inline]
    pub(crate) fn class_for(&self, bytes: u64) -> Option<u16> {
        if bytes > u64::from(*self.chunk.last()?) {
            return None;
        }
        Some(self.chunk.partition_point(|&c| u64::from(c) < bytes) as u16)
    }

    /// The largest number of chunks any page can hold.
    pub(crate) fn max_slots(&self) -> u32 {
        self.slots[0]
    }

    /// Every (class, chunk size).
    pub(crate) fn all(&self) -> Vec<(ClassId, u32)> {
        self.chunk
            .iter()
            .enumerate()
            .map(|(i, &c)| (ClassId(i as u16), c))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_grow_cover_the_page_and_pick_the_smallest_fit() {
        let s = SizeClasses::new(48, 1.08, 1 << 20);
        assert_eq!(s.chunk(0), 48);
        assert_eq!(s.chunk((s.len() - 1) as u16), 1 << 20);
        for w in s.chunk.windows(2) {
            assert!(w[0] < w[1]);
            assert!(f64::from(w[1]) <= f64::from(w[0]) * 1.08 + 16.0);
        }
        assert_eq!(s.class_for(1), Some(0));
        assert_eq!(s.class_for(48), Some(0));
        assert_eq!(s.class_for(49), Some(1));
        assert_eq!(s.class_for(1 << 20), Some((s.len() - 1) as u16));
        assert_eq!(s.class_for((1 << 20) + 1), None);
        assert_eq!(s.max_slots(), (1 << 20) / 48);
        assert!(s.len() < 200, "{} classes", s.len());
    }
}
