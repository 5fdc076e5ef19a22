// Glue of clusterd-ts's tools/volcano/build.sh, copied into the scratch copy of cmd/scheduler:
// links the ascend plugin (and its init registration) into vc-scheduler.
package main

import _ "volcano.sh/volcano/pkg/scheduler/plugins/ascend-volcano-plugin"
