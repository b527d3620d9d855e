//! Trace records, streaming readers/writers for cache trace formats, synthetic generators, trace statistics.
