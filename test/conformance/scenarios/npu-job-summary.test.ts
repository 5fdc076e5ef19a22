// The conformance scenario npu-job-summary against the real ClusterD (test/conformance/suite.ts).
import { conformanceSuite } from '../suite.ts';

conformanceSuite('npu-job-summary');
