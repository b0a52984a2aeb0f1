import type { Application, Environment } from '@kpromo/api';
import { fleetTargets } from '@kpromo/api';
import { registryEndpoint } from '../extension/credentials.js';
import { clusterAccessRefusal } from '../kube/clusterAccess.js';
import { KPROMO_TYPES, resourcePath } from '../kube/paths.js';
import { KubeError } from '../kube/rest.js';
import { OciError } from '../oci/errors.js';
import { RegistryClient } from '../oci/registryClient.js';
import { registryRepository } from '../util/imageRef.js';
import { type CheckResult, type DoctorCheck, type DoctorContext, why } from './check.js';

const list = async <T>(ctx: DoctorContext, kind: 'Environment' | 'Application') =>
  (await ctx.control.get<{ items: T[] }>(resourcePath(KPROMO_TYPES[kind], ctx.namespace))).items;

/** Each Environment's cluster: allowed by clusterAccess (with --config) and reachable with your kubeconfig. */
export const environmentsCheck: DoctorCheck = {
  id: 'environments',
  title: 'Environments and their clusters',
  async run(ctx) {
    const envs = await list<Environment>(ctx, 'Environment');
    if (!envs.length)
      return [
        {
          check: 'environments',
          status: 'warn',
          subject: `namespace ${ctx.namespace}`,
          message: 'no Environments',
          fix: 'kpromo adopt --env NAME=CONTEXT/NAMESPACE … --apply',
        },
      ];
    const out: CheckResult[] = [];
    // A fleet is checked cluster by cluster.
    for (const { env, cluster } of envs.flatMap(fleetTargets)) {
      const subject = `Environment ${env.metadata.name}${cluster !== env.metadata.name ? ` cluster ${cluster}` : ''}`;
      if (ctx.clusterAccess) {
        const refused = clusterAccessRefusal(ctx.clusterAccess, env);
        if (refused) {
          out.push({
            check: 'environments',
            status: 'fail',
            subject,
            message: refused,
            fix: 'add a clusterAccess rule for it to the controller config (values clusterAccess in the Helm chart)',
          });
          continue;
        }
      }
      const context = env.spec.cluster?.context;
      const rest = context ? ctx.clientFor(context) : undefined;
      if (!rest) {
        out.push({
          check: 'environments',
          status: 'warn',
          subject,
          message: context
            ? `context ${context} is not in your kubeconfig: its cluster can only be checked where the controller runs`
            : 'uses a kubeconfig Secret or the in-cluster account: only the controller can check it',
        });
        continue;
      }
      try {
        await rest.get(`/api/v1/namespaces/${encodeURIComponent(env.spec.namespace)}`);
        out.push({
          check: 'environments',
          status: 'pass',
          subject,
          message: `cluster ${context} reachable, namespace ${env.spec.namespace} exists`,
        });
      } catch (e) {
        const status = e instanceof KubeError ? e.status : 0;
        out.push(
          status === 404
            ? {
                check: 'environments',
                status: 'fail',
                subject,
                message: `namespace ${env.spec.namespace} does not exist in ${context}`,
                fix: `kubectl --context ${context} create namespace ${env.spec.namespace}, or fix spec.namespace`,
              }
            : status === 401 || status === 403
              ? {
                  check: 'environments',
                  status: 'warn',
                  subject,
                  message: `you may not read namespace ${env.spec.namespace} in ${context} (${status}); the controller's own access is not checked from here`,
                }
              : {
                  check: 'environments',
                  status: 'fail',
                  subject,
                  message: `cluster ${context} unreachable: ${why(e)}`,
                  fix: `check the context's server address and that the apiserver is up (kubectl --context ${context} version)`,
                },
        );
      }
    }
    return out;
  },
};

/**
 * Each Environment's registry answers, with the credentials its Secret holds (read as you; never
 * printed), for the repository of one of its Applications.
 */
export const registriesCheck: DoctorCheck = {
  id: 'registries',
  title: 'Registries and credentials',
  async run(ctx) {
    const [envs, apps] = await Promise.all([
      list<Environment>(ctx, 'Environment'),
      list<Application>(ctx, 'Application'),
    ]);
    const out: CheckResult[] = [];
    for (const env of envs) {
      const subject = `Environment ${env.metadata.name} registry ${env.spec.registry.host}`;
      const app = apps[0];
      const repo = registryRepository(env.spec.registry.prefix, app?.spec.image.repository ?? 'library/kpromo-doctor');
      let endpoint: Awaited<ReturnType<typeof registryEndpoint>>;
      let note = '';
      try {
        endpoint = await registryEndpoint(ctx.control, env, repo);
      } catch (e) {
        if (
          !(e instanceof KubeError && e.status === 403) &&
          !(e instanceof Error && /Credentials/.test(e.name + e.message))
        )
          throw e;
        endpoint = { host: env.spec.registry.host, insecure: env.spec.registry.insecure };
        note = `; its credentials Secret could not be used here (${why(e)}), checked anonymously`;
      }
      const client = new RegistryClient(endpoint, { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 }, ctx.egress);
      try {
        const res = await client.request({ method: 'GET', repository: repo, path: 'tags/list', accept: [404] });
        await res.body?.cancel();
        out.push({
          check: 'registries',
          status: note ? 'warn' : 'pass',
          subject,
          message: `${res.status === 404 ? `reachable (${repo} has no images yet)` : `${repo} readable`}${endpoint.auth ? ' with its credentials' : ''}${note}`,
        });
      } catch (e) {
        const unauthorized = e instanceof OciError && e.code === 'UNAUTHORIZED';
        const blocked = e instanceof OciError && e.code === 'EGRESS_BLOCKED';
        out.push({
          check: 'registries',
          status: 'fail',
          subject,
          message: why(e),
          fix: unauthorized
            ? `check the Secret named by spec.registry.credentialsSecretRef of Environment ${env.metadata.name} (kubectl create secret docker-registry …, labelled promotions.kpromo.dev/credential=true)`
            : blocked
              ? `the controller refuses this address too: list it (or its range, e.g. the Service CIDR) in egress.allowedCidrs of the controller config (chart: config.egress.allowedCidrs), then pass the updated file to --config`
              : `check that ${env.spec.registry.host} is reachable from the controller${env.spec.registry.insecure ? ' over plain http' : ' over https'}`,
        });
      }
    }
    return out;
  },
};
