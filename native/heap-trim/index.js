'use strict';
// The compiled helper, or null where it could not be built or the C library has no malloc_trim (not
// glibc): callers then leave the heap as it is. Loading never throws.
let native = null;
try {
  native = require('./build/Release/heap_trim.node');
} catch {
  native = null;
}
module.exports = { trimHeap: native && native.supported ? native.trimHeap : null };
