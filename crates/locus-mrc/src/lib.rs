//! Miss ratio curves and the profilers that build them: exact LRU, SHARDS, AET, EAET, footprint, KRR.
