//! Pure parse/compose for RESP2/RESP3 (and memcached text): no sockets.
