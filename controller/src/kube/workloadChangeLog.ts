/**
 * The names of the workloads that changed in one cluster+namespace, as a bounded log with cursors.
 * Readers that keep an answer per workload (what version runs where) ask what changed since their
 * last look and redo only that: at 5,000 applications a candidate list reads 10,000 versions, and
 * under churn only a handful change between two answers.
 *
 * "Unknown" (no `names`) is the safe answer: on the first read, after a {@link reset} (the watch's
 * state changed, e.g. it synced or failed), or when more changes happened than the log keeps.
 */
export class WorkloadChangeLog {
  /** Cursor of the latest change (or reset). */
  private seq = 0;
  /** Cursor of the latest reset: nothing before it can be answered. */
  private resetAt = 0;
  /** Names of the changes after `resetAt`, oldest first: the last one has cursor `seq`. */
  private names: string[] = [];

  constructor(private readonly capacity = 4096) {}

  /** A workload of this name was added, updated or deleted. */
  changed(name: string): void {
    this.seq++;
    this.names.push(name);
    // Trimmed in halves, so a change costs O(1) amortised.
    if (this.names.length > 2 * this.capacity) this.names = this.names.slice(this.names.length - this.capacity);
  }

  /** Anything may have changed (the watch's state did): every reader starts over. */
  reset(): void {
    this.seq++;
    this.resetAt = this.seq;
    this.names = [];
  }

  /**
   * The names changed after `cursor` (a cursor from an earlier answer; none on the first read), in
   * order, possibly repeated; without `names` when the log cannot tell.
   */
  since(cursor?: number): { cursor: number; names?: string[] } {
    const oldest = this.seq - this.names.length; // the cursor just before the oldest kept change
    if (cursor === undefined || cursor < this.resetAt || cursor < oldest || cursor > this.seq)
      return { cursor: this.seq };
    return { cursor: this.seq, names: this.names.slice(this.names.length - (this.seq - cursor)) };
  }
}
