import {
  formatGitUrl,
  GIT_URL_ANNOTATION,
  GIT_URL_KEY,
  normalizeGitUrl,
  urlHasPrefix,
} from '../credentials/gitCredentials.js';
import type { SecretObject } from '../credentials/secrets.js';

/** How the notifier reads Secrets of a Notification's namespace (the control cluster's). */
export interface SecretReaders {
  readSecret(namespace: string, name: string, key: string): Promise<string | undefined>;
  /** Every key of a Secret; undefined when it does not exist. */
  readSecretData?(namespace: string, name: string): Promise<Record<string, string> | undefined>;
  /** Data and annotations (where a token's allowed API URL may be named); undefined when it does not exist. */
  readSecretObject?(namespace: string, name: string): Promise<SecretObject | undefined>;
}

export interface SecretRef {
  name: string;
  key?: string;
}

/**
 * Pure: why `secret`'s token may not go to `apiURL`, or undefined. A token goes to the provider's
 * public API (`defaultURL`) unless its Secret names another URL prefix (data key `url` or annotation
 * promotions.kpromo.dev/url, as git credentials do): whoever can edit a Notification chooses apiURL,
 * only whoever owns the Secret chooses where its token may be sent.
 */
export function tokenDestinationProblem(
  secret: Pick<SecretObject, 'namespace' | 'name' | 'data' | 'annotations'>,
  apiURL: string,
  defaultURL: string,
  field: string,
): string | undefined {
  const where = `Secret ${secret.namespace}/${secret.name}`;
  const named = secret.data[GIT_URL_KEY]?.trim() || secret.annotations[GIT_URL_ANNOTATION]?.trim();
  try {
    const target = normalizeGitUrl(apiURL, field);
    if (!named) {
      const def = normalizeGitUrl(defaultURL, 'default');
      if (formatGitUrl(target) === formatGitUrl(def)) return undefined;
      return `${field} ${formatGitUrl(target)} is not ${formatGitUrl(def)}: ${where} must name it (key "${GIT_URL_KEY}" or annotation ${GIT_URL_ANNOTATION}) before its token is sent there`;
    }
    const allowed = normalizeGitUrl(named, `${where} URL`);
    if (!urlHasPrefix(target, allowed))
      return `${where} allows its token to be sent under ${formatGitUrl(allowed)} only, not to ${field} ${formatGitUrl(target)}`;
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

/** The Secrets one Notification references, read with errors that name the field and Notification. */
export class NotificationSecrets {
  constructor(
    private readonly readers: SecretReaders,
    private readonly namespace: string,
    /** "<namespace>/<name>" of the Notification. */
    private readonly notification: string,
  ) {}

  private where(field: string, name: string, key?: string) {
    return `Secret ${name}${key ? ` key ${key}` : ''} (${field} of Notification ${this.notification})`;
  }

  /** One value, as stored (an HMAC key is used byte for byte); throws when the Secret or key is missing or empty. */
  async value(ref: SecretRef, defaultKey: string, field: string): Promise<string> {
    const key = ref.key ?? defaultKey;
    const v = await this.readers.readSecret(this.namespace, ref.name, key);
    if (!v) throw new Error(`${this.where(field, ref.name, key)} not found`);
    return v;
  }

  /** A URL kept in a Secret (incoming webhooks: the URL is the credential), surrounding whitespace dropped. */
  async url(ref: SecretRef, field: string): Promise<string> {
    const v = (await this.value(ref, 'url', field)).trim();
    if (!/^https?:\/\/\S+$/.test(v))
      throw new Error(`${this.where(field, ref.name, ref.key ?? 'url')} does not hold an http(s) URL`);
    return v;
  }

  /** Every key of a Secret; throws when it does not exist. */
  async data(name: string, field: string): Promise<Record<string, string>> {
    const data = this.readers.readSecretData ? await this.readers.readSecretData(this.namespace, name) : undefined;
    if (!data) throw new Error(`${this.where(field, name)} not found`);
    return data;
  }

  /** A token and the check that `apiURL` is a place its Secret lets it go ({@link tokenDestinationProblem}). */
  async token(ref: SecretRef, field: string, apiURL: string, defaultURL: string, urlField: string): Promise<string> {
    const key = ref.key ?? 'token';
    const obj = this.readers.readSecretObject
      ? await this.readers.readSecretObject(this.namespace, ref.name)
      : await this.readers
          .readSecretData?.(this.namespace, ref.name)
          .then((data) =>
            data ? { namespace: this.namespace, name: ref.name, type: 'Opaque', data, annotations: {} } : undefined,
          );
    const token = obj?.data[key]?.trim();
    if (!obj || !token) throw new Error(`${this.where(field, ref.name, key)} not found`);
    const problem = tokenDestinationProblem(obj, apiURL, defaultURL, urlField);
    if (problem) throw new Error(`Notification ${this.notification}: ${problem}`);
    return token;
  }
}
