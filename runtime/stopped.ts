/**
 * The reason a signal carries when its owner stops: one AbortError for all. `abort()` without a
 * reason builds a new DOMException, stack and all, each time, and stopping the controller aborts
 * dozens of loops and watches at once (it showed in profiles of controller restarts).
 */
export const STOPPED: DOMException = new DOMException('This operation was aborted', 'AbortError');
