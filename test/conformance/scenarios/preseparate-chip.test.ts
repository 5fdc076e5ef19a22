// The conformance scenario preseparate-chip against the real ClusterD (test/conformance/suite.ts).
import { conformanceSuite } from '../suite.ts';

conformanceSuite('preseparate-chip');
