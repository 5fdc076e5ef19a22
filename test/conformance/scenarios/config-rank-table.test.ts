// The conformance scenario config-rank-table against the real ClusterD (test/conformance/suite.ts).
import { conformanceSuite } from '../suite.ts';

conformanceSuite('config-rank-table');
