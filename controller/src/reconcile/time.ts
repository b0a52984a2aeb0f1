/** RFC 3339 in whole seconds, as every kpromo timestamp. */
export const iso = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
