import type { KubeRest } from '../kube/rest.js';
import type { Caller } from './identity.js';

/**
 * The identity of whoever runs the CLI or stdio MCP: the kubeconfig user as the apiserver sees it
 * (SelfSubjectReview), so what is recorded is what RBAC and admission see, never $USER.
 */
export async function localCaller(control: KubeRest): Promise<Caller> {
  const r = await control.create<{ status?: { userInfo?: { username?: string; groups?: string[]; uid?: string } } }>(
    '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  );
  const u = r.status?.userInfo;
  if (!u?.username) throw new Error(`cluster "${control.clusterName}" did not say who the kubeconfig user is`);
  return { username: u.username, groups: u.groups ?? [], ...(u.uid ? { uid: u.uid } : {}), source: 'local' };
}
