import { assertCredentialAllowed, type CredentialUse, credentialRefusal } from '../credentials/credentialPolicy.js';
import type { SecretObject } from '../credentials/secrets.js';

/** How the notifier reads Secrets of a Notification's namespace (the control cluster's). */
export interface SecretReaders {
  /** Data, labels and annotations (where its owner says whether and where it may go); undefined when it does not exist. */
  readSecretObject(namespace: string, name: string): Promise<SecretObject | undefined>;
}

export interface SecretRef {
  name: string;
  key?: string;
}

/**
 * The Secrets one Notification references, for one delivery. Every Secret must opt in and name its
 * destinations (credentials/credentialPolicy.ts) before any of its data is looked at; each is
 * checked against the URL it is read for, and {@link refusalFor} checks every one read so far
 * against each request again right before it is sent.
 */
export class NotificationSecrets {
  private readonly read: Array<{ secret: SecretObject; use: CredentialUse }> = [];

  constructor(
    private readonly readers: SecretReaders,
    private readonly namespace: string,
    /** "<namespace>/<name>" of the Notification. */
    private readonly notification: string,
  ) {}

  private where(field: string, name: string, key?: string) {
    return `Secret ${name}${key ? ` key ${key}` : ''} (${field} of Notification ${this.notification})`;
  }

  /**
   * The Secret `name`, once it may go to `url` (undefined: the URL is in the Secret itself; only its
   * opt-in is checked here, the URL by the caller). Throws a status-safe Error otherwise.
   */
  private async secret(name: string, field: string, url: string | undefined, urlField: string): Promise<SecretObject> {
    const s = await this.readers.readSecretObject(this.namespace, name);
    if (!s) throw new Error(`${this.where(field, name)} not found`);
    const use = { field, owner: `Notification ${this.notification}`, destinationField: urlField };
    assertCredentialAllowed(s, use, url);
    this.read.push({ secret: s, use });
    return s;
  }

  /** One value, as stored (an HMAC key is used byte for byte), for requests to `url`; throws when refused, missing or empty. */
  async value(ref: SecretRef, defaultKey: string, field: string, url: string, urlField: string): Promise<string> {
    const key = ref.key ?? defaultKey;
    const v = (await this.secret(ref.name, field, url, urlField)).data[key];
    if (!v) throw new Error(`${this.where(field, ref.name, key)} not found`);
    return v;
  }

  /**
   * A URL kept in a Secret (incoming webhooks: the URL is the credential), surrounding whitespace
   * dropped; its Secret's destinations must allow the URL it holds.
   */
  async url(ref: SecretRef, field: string): Promise<string> {
    const key = ref.key ?? 'url';
    const s = await this.secret(ref.name, field, undefined, `the URL in ${field}`);
    const v = s.data[key]?.trim();
    if (!v) throw new Error(`${this.where(field, ref.name, key)} not found`);
    if (!/^https?:\/\/\S+$/.test(v))
      throw new Error(`${this.where(field, ref.name, key)} does not hold an http(s) URL`);
    assertCredentialAllowed(s, this.read.at(-1)!.use, v);
    return v;
  }

  /** Every key of a Secret, for requests to `url`; throws when refused or missing. */
  async data(name: string, field: string, url: string, urlField: string): Promise<Record<string, string>> {
    return (await this.secret(name, field, url, urlField)).data;
  }

  /** A token (key default "token") for requests under `apiURL`; throws when refused, missing or empty. */
  async token(ref: SecretRef, field: string, apiURL: string, urlField: string): Promise<string> {
    const key = ref.key ?? 'token';
    const token = (await this.secret(ref.name, field, apiURL, urlField)).data[key]?.trim();
    if (!token) throw new Error(`${this.where(field, ref.name, key)} not found`);
    return token;
  }

  /**
   * Why a request to `url` may not be sent with the Secrets this delivery read, or undefined: the
   * notifier asks right before every attempt (no redirect is ever followed: guardedFetch).
   */
  refusalFor(url: string): string | undefined {
    for (const { secret, use } of this.read) {
      const refusal = credentialRefusal(secret, use, url);
      if (refusal) return refusal;
    }
    return undefined;
  }
}
