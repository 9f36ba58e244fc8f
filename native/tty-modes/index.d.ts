/** Bit 0: ECHO is on; bit 1: ICANON is on; negative: -errno. Null when the native helper is not built. */
export declare const lineModes: ((ttyPath: string) => number) | null;
