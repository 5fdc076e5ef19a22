// Glue of clusterd-ts's tools/volcano/build.sh, copied into the scratch copy of the ascend plugin
// (renamed from package main) so vc-scheduler has the plugin compiled in instead of loading a
// -buildmode=plugin .so (which needs cgo and byte-identical dependency builds on both sides).
package ascendvolcanoplugin

import "volcano.sh/volcano/pkg/scheduler/framework"

func init() { framework.RegisterPluginBuilder(PluginName, New) }
