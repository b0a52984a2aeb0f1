import { isDeepStrictEqual } from 'node:util';
import { GROUP, openApiSchema, RESOURCES, VERSION } from '@kpromo/api';
import type { DoctorCheck } from './check.js';

interface Crd {
  spec: { versions: Array<{ name: string; served: boolean; schema?: { openAPIV3Schema?: unknown } }> };
  status?: { conditions?: Array<{ type: string; status: string }> };
}

/** The apiserver stores a schema without empty `properties` objects; compare like with like. */
function normalized(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(normalized);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.entries(v)
        .filter(([k, x]) => !(k === 'properties' && x && typeof x === 'object' && !Object.keys(x).length))
        .map(([k, x]) => [k, normalized(x)]),
    );
  return v;
}

const FIX =
  'kubectl apply --server-side -f examples/crds/ (or helm upgrade kpromo deploy/helm/kpromo, which ships the CRDs of its release)';

/** Every kpromo CRD is installed, Established, serves this version, with the schema of this release. */
export const crdsCheck: DoctorCheck = {
  id: 'crds',
  title: 'CRDs',
  async run({ control }) {
    return Promise.all(
      Object.values(RESOURCES).map(async (def) => {
        const name = `${def.plural}.${GROUP}`;
        const subject = `CustomResourceDefinition ${name}`;
        const crd = await control.getOrUndefined<Crd>(
          `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`,
        );
        if (!crd) return { check: 'crds', status: 'fail' as const, subject, message: 'not installed', fix: FIX };
        const v = crd.spec.versions.find((x) => x.name === VERSION);
        if (!v?.served)
          return { check: 'crds', status: 'fail' as const, subject, message: `does not serve ${VERSION}`, fix: FIX };
        if (!crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True'))
          return {
            check: 'crds',
            status: 'fail' as const,
            subject,
            message: 'not Established yet',
            fix: `wait, then kubectl describe crd ${name}`,
          };
        if (!isDeepStrictEqual(normalized(v.schema?.openAPIV3Schema ?? {}), normalized(openApiSchema(def))))
          return {
            check: 'crds',
            status: 'warn' as const,
            subject,
            message:
              'installed schema differs from this release (older or newer CRDs): new fields may be dropped or refused',
            fix: FIX,
          };
        return {
          check: 'crds',
          status: 'pass' as const,
          subject,
          message: `${VERSION} served, schema of this release`,
        };
      }),
    );
  },
};
