// Loaded by scripts/test.mjs into every test file's process (node's test runner passes `--import`
// on to each file it runs): the file works in a Datastore project of its own on the emulators it
// shares with the files before it in its lane (scripts/test-lanes.mjs), or beside it when a command
// runs several files on one pair of emulators. Both emulators keep each project's data apart (its
// entities, its namespaces, the `__namespace__` query a sweep asks), so files never see each
// other's data: a sweep, which looks in every namespace of its project, sweeps only its own file's
// records. Child processes a test starts inherit the variable, and with it the project.
const isTestFile = !process.execArgv.includes('--test') && /\.test\.[cm]?[jt]s$/.test(process.argv[1] ?? '');
if (isTestFile && process.env.DATASTORE_PROJECT_ID !== undefined) {
  process.env.DATASTORE_PROJECT_ID = `${process.env.DATASTORE_PROJECT_ID}-${process.pid}`;
}
