// Five projects, selected by path: unit tests sit next to their code and need no apiserver;
// integration tests share one real kube-apiserver + etcd started by globalSetup;
// conformance tests start their own pair of control planes (the real ClusterD on one, clusterd-ts
// on the other) and real-stack tests their own control plane with the real Volcano (and the Ascend
// Operator), so neither needs the globalSetup; the simulation suite runs the controller on an
// in-memory apiserver in virtual time; test/run-tests.mjs runs those three beside the others.
const transform = {
  '^.+\\.ts$': ['@swc/jest', {
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022', experimental: { keepImportAttributes: true } },
    module: { type: 'es6' },
    sourceMaps: 'inline',
  }],
};
const common = { transform, extensionsToTreatAsEsm: ['.ts'], testEnvironment: 'node' };
const ignore = ['/node_modules/', '/dist/'];

export default {
  reporters: ['default'],
  testSequencer: '<rootDir>/test/support/sequencer.mjs',
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/**/*.test.ts'],
      testPathIgnorePatterns: [...ignore, '<rootDir>/test/integration/', '<rootDir>/test/conformance/', '<rootDir>/test/real-stack/', '<rootDir>/test/simulation/'] },
    { ...common, displayName: 'integration', testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      testPathIgnorePatterns: ignore,
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts' },
    { ...common, displayName: 'conformance', testMatch: ['<rootDir>/test/conformance/**/*.test.ts'],
      testPathIgnorePatterns: ignore },
    { ...common, displayName: 'simulation', testMatch: ['<rootDir>/test/simulation/**/*.test.ts'],
      testPathIgnorePatterns: ignore },
    { ...common, displayName: 'real-stack', testMatch: ['<rootDir>/test/real-stack/**/*.test.ts'],
      testPathIgnorePatterns: ignore },
  ],
};
