import type { EventStore, JSONRPCMessage } from '@modelcontextprotocol/server';

/**
 * Resumability of one 2025-era session's SSE streams (SEP-1699): every message the transport
 * sends on a stream gets an event id, and a client that lost the connection reconnects with
 * Last-Event-ID and receives what it missed. Held in memory for the session's lifetime, bounded
 * in bytes (oldest events go first), gone with the session.
 */
export class SessionEventStore implements EventStore {
  private seq = 0;
  private bytes = 0;
  private readonly events: Array<{ id: string; streamId: string; message: JSONRPCMessage; size: number }> = [];

  constructor(private readonly maxBytes = 2 * 1024 * 1024) {}

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const id = String(++this.seq);
    const size = JSON.stringify(message).length;
    this.events.push({ id, streamId, message, size });
    this.bytes += size;
    while (this.bytes > this.maxBytes && this.events.length > 1) this.bytes -= this.events.shift()!.size;
    return id;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return this.events.find((e) => e.id === eventId)?.streamId;
  }

  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> },
  ): Promise<string> {
    const i = this.events.findIndex((e) => e.id === lastEventId);
    if (i < 0) return '';
    const { streamId } = this.events[i];
    // Priming events carry no message: nothing to replay for them.
    for (const e of this.events.slice(i + 1))
      if (e.streamId === streamId && 'jsonrpc' in e.message) await send(e.id, e.message);
    return streamId;
  }
}
