// The conformance scenario subhealthy-dump against the real ClusterD (test/conformance/suite.ts).
import { conformanceSuite } from '../suite.ts';

conformanceSuite('subhealthy-dump');
