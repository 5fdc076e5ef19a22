/**
 * What policy reads of a job from the controller's job index, as structural types: the index
 * (state/job-index.ts, over the informer caches) lives above policy, and policy imports no
 * Kubernetes object type (those are runtime/'s). The index's JobEntry and JobIndex, and the
 * runtime's Pod and PodGroup objects, satisfy these shapes as they are; state/job-index.ts declares
 * JobEntry as an extension of JobFacts so tsc checks it where it is defined.
 */
import type { JobKnobs } from '../../schemas/job-knobs/job-knobs.ts';
import type { JobView } from './job-view.ts';

type StringMap = Readonly<Record<string, string>>;

/** The PodGroup fields policy reads: its knobs' labels/annotations and its phase. */
export interface PodGroupShape {
  readonly metadata?: { readonly labels?: StringMap; readonly annotations?: StringMap };
  readonly status?: { readonly phase?: string };
}

/** The raw pod fields policy reads (NPU requests, annotations copied to the hot-switch FSM). */
export interface PodShape {
  readonly metadata?: { readonly annotations?: StringMap };
  readonly spec?: { readonly containers?: ReadonlyArray<{ readonly resources?: { readonly limits?: StringMap; readonly requests?: StringMap } }> };
}

/** One job: its view (pods, ranks, NPUs), its parsed knobs and its PodGroup. */
export interface JobFacts {
  readonly view: JobView;
  readonly knobs: JobKnobs;
  readonly podGroup: PodGroupShape;
}

/** The index lookups policy needs: the jobs with a pod on some nodes, and one job by key. */
export interface JobLookup {
  jobKeysOnNodes(nodes: Iterable<string>): Set<string>;
  job(key: string): JobFacts | undefined;
}
