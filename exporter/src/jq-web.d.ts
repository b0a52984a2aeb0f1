declare module 'jq-web' {
  interface JqWeb {
    /** Runs `filter` on `input`; throws with jq's message on compile or runtime errors. */
    json(input: unknown, filter: string): unknown;
  }
  const jq: Promise<JqWeb>;
  export = jq;
}
