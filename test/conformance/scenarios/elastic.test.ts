// The conformance scenario elastic against the real ClusterD (test/conformance/suite.ts).
import { conformanceSuite } from '../suite.ts';

conformanceSuite('elastic');
