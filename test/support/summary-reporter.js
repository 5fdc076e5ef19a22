// Prints one plain closing line, "tests: N passed, N failed, N skipped", that CI reads.
export default class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const failedSuites = results.numFailedTestSuites - (results.numFailedTests > 0 ? 0 : 0);
    process.stdout.write(`\ntests: ${results.numPassedTests} passed, ${results.numFailedTests + (results.numRuntimeErrorTestSuites ?? 0)} failed, ${skipped} skipped\n`);
    if (failedSuites > 0 && results.numFailedTests === 0) process.stdout.write(`suites failed to run: ${failedSuites}\n`);
  }
}
