/** An error's first line: what a report line shows (stack traces and apiserver bodies stay out). */
export const why = (e: unknown) => (e instanceof Error ? e.message.split('\n')[0] : String(e));
