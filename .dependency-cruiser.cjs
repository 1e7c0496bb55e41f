// Import rules between the workspace's packages, checked by `pnpm lint` (root task lint:deps).
/** Test code: unit tests, test helpers (`src/testing/`) and the e2e suite. */
const TEST = '(\\.test\\.ts$|/src/testing/|^test-e2e/)';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'No module imports itself through others, not even for types.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'apps-use-public-entries',
      severity: 'error',
      comment:
        'Apps and the bench import only @lvstamp/core, @lvstamp/core/testing and @lvstamp/app-kit, never files inside another package.',
      from: { path: '^(apps|bench)/' },
      to: {
        path: '^packages/',
        pathNot: '^packages/(core/dist/(index|testing/index)|app-kit/dist/index)\\.(js|d\\.ts)$',
      },
    },
    {
      name: 'apps-import-no-other-app',
      severity: 'error',
      comment:
        'An app never imports another app (or the bench, or the e2e suite): what two apps share lives in core or app-kit.',
      from: { path: '^(apps/[^/]+|bench)/' },
      to: { path: '^(apps/[^/]+|bench|test-e2e)/', pathNot: '^$1/' },
    },
    {
      name: 'no-testing-in-production',
      severity: 'error',
      comment: 'Production code never imports tests, test helpers or @lvstamp/core/testing.',
      from: { pathNot: TEST },
      to: { path: [TEST, '^packages/core/dist/testing/'] },
    },
    {
      name: 'core-imports-no-app',
      severity: 'error',
      comment: 'The core knows nothing of the apps, the bench or the e2e suite.',
      from: { path: '^packages/core/' },
      to: { path: '^(apps|bench|test-e2e|packages/app-kit)/' },
    },
    {
      name: 'app-kit-imports-no-lvstamp',
      severity: 'error',
      comment: 'app-kit is presentation only: it imports neither the core nor any app.',
      from: { path: '^packages/app-kit/' },
      to: { path: '^(apps|bench|test-e2e|packages/core)/' },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'Every import resolves (run after the build: workspace packages resolve to dist/).',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: ['(^|/)node_modules/', '^packages/[^/]+/dist/'] },
    exclude: { path: ['(^|/)node_modules/'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.base.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'types', 'default'],
      extensions: ['.ts', '.js', '.d.ts', '.json'],
    },
  },
};
