// `@kpromo/test-harness/controller`: a kpromo controller on the local clusters, for the integration
// tests and benchmarks of every package: namespaces, CRs, workloads, plans, users and roles, worlds
// (a seeded two-stage release with an in-process controller), the fault-injection release and the
// GitOps repository Flux pulls. Through @kpromo/controller's exports only.
export * from './e2e.js';
export * from './faultScenario.js';
export * from './gitopsFixture.js';
