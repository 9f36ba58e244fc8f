/**
 * Gives every whole free page of the C heap back to the system, off the event loop (malloc_trim(0) on a
 * libuv thread); calls back with true when something was given back. Null where it is not built or the
 * C library is not glibc.
 */
export declare const trimHeap: ((done: (released: boolean) => void) => void) | null;
