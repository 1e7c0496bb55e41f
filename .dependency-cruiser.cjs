// Import rules between the workspace's packages and between the core's layers, checked by
// `pnpm lint` (root task lint:deps); docs/ARCHITECTURE.md draws the core's layers.
/** Test code: unit tests, test helpers (`src/testing/`) and the e2e suite. */
const TEST = '(\\.test\\.ts$|/src/testing/|^test-e2e/)';
const CORE = '^packages/core/src/';
/** The core's foundation: no lvm, no volume life cycle, no GC. */
const FOUNDATION = `${CORE}(errors|naming|name-limits|control-characters)\\.ts$|${CORE}(exec|lock|os|header|device|fs)/`;
/** What of the lvm module other core code may import: its facade, its types and its validators. */
const LVM_SURFACE = `${CORE}lvm/(lvm|types|volume-groups|logical-volumes|thin-snapshots|device-filter|index)\\.ts$`;

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
      name: 'core-foundation-stays-below',
      severity: 'error',
      comment:
        'errors, naming, exec, lock, header, device and fs know nothing of lvm, volumes, the GC, volume-group admin or the node facade.',
      from: { path: FOUNDATION, pathNot: TEST },
      to: { path: `${CORE}(lvm|volumes|gc|vg)/|${CORE}(node|index)\\.ts$` },
    },
    {
      name: 'core-os-helpers-at-the-bottom',
      comment:
        'os/ (device numbers, Node system errors, mountinfo, holders) serves device/, fs/ and header/ and imports none of them.',
      severity: 'error',
      from: { path: `${CORE}os/`, pathNot: TEST },
      to: { path: `${CORE}(exec|lock|header|device|fs|lvm|volumes|gc|vg)/` },
    },
    {
      name: 'core-device-fs-header-apart',
      comment:
        'device/, fs/ and header/ share helpers through os/, never through each other (device/ may read header/constants.ts: the data offset).',
      severity: 'error',
      from: { path: `${CORE}(device|fs|header)/`, pathNot: TEST },
      to: {
        path: `${CORE}(device|fs|header)/`,
        pathNot: [`${CORE}header/constants\\.ts$`, `${CORE}$1/`],
      },
    },
    {
      name: 'core-lvm-is-the-bottom-of-lvm',
      severity: 'error',
      comment:
        'The lvm command module runs lvm and parses its reports; it never knows what sits above it (volumes, GC, admin, facade), nor headers, data devices or filesystems.',
      from: { path: `${CORE}lvm/`, pathNot: TEST },
      to: { path: `${CORE}(volumes|gc|vg|header|device|fs)/|${CORE}(node|index)\\.ts$` },
    },
    {
      name: 'core-lvm-internals-stay-inside',
      severity: 'error',
      comment:
        'Only the lvm module builds lvm argv and parses reports: others use Lvm, VolumeGroups and LogicalVolumes, never its runner, report parsers or failure classification.',
      from: { path: CORE, pathNot: `${CORE}lvm/|${CORE}index\\.ts$|${TEST}` },
      to: { path: `${CORE}lvm/`, pathNot: LVM_SURFACE },
    },
    {
      name: 'core-volumes-below-gc-and-facade',
      severity: 'error',
      comment:
        'The volume module sits under the GC and the node facade; it asks vg/ (below it) its volume-group questions.',
      from: { path: `${CORE}volumes/`, pathNot: TEST },
      to: { path: `${CORE}gc/|${CORE}(node|index)\\.ts$` },
    },
    {
      name: 'core-gc-through-ports',
      severity: 'error',
      comment:
        'The GC reaches lvm, data devices and headers through its ports (gc/ports.ts), never the lvm module itself; only lvm types.',
      from: { path: `${CORE}gc/`, pathNot: TEST },
      to: {
        path: `${CORE}lvm/|${CORE}vg/|${CORE}(node|index)\\.ts$`,
        pathNot: `${CORE}lvm/types\\.ts$`,
      },
    },
    {
      name: 'core-vg-admin-over-lvm',
      severity: 'error',
      comment: 'Volume-group admin uses the lvm module, not the volume life cycle or the GC.',
      from: { path: `${CORE}vg/`, pathNot: TEST },
      to: { path: `${CORE}(volumes|gc)/|${CORE}(node|index)\\.ts$` },
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
