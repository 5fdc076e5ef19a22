// taskd-client: a TaskD (role "taskd") built on MindCluster's own generated Recover stubs
// (clusterd/pkg/interface/grpc/recover), following TaskD's manager.go: Init, Register,
// SubscribeProcessManageSignal on one channel, and after any failure or end of stream the same again
// 1 s later (subscribeProcessManageSignal / startSubscribe); every report on a fresh connection with
// up to MaxSendTimes+1 tries (ReportControllerInfoToClusterd). The MindIO behind it answers signals:
// preExitProcess -> its processes exit -> ReportProcessFault; stopTrain -> ReportStopComplete;
// globalFault / hot switch -> ReportRecoverStrategy; changeStrategy -> ReportRecoverStatus.
// Like TaskD's pre-recover plugin (prerecover.go) it acts on a preExitProcess / globalFault only
// when its uuid differs from the last one it saw (starting from "").
//
// It prints one JSON line per event on stdout (t = Unix ms): init, register, subscribe, signal,
// keepalive, report, stream-end. Built by build.sh from a scratch copy of the snapshot; never part
// of the product.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "clusterd/pkg/interface/grpc/recover"
)

const maxSendTimes = 3 // taskd/common/constant MaxSendTimes: tries = MaxSendTimes + 1

var (
	addr         = flag.String("addr", "127.0.0.1:8899", "ClusterD (or clusterd-ts) gRPC address host:port")
	jobID        = flag.String("job", "", "job id (the job's UID, MINDX_TASK_ID)")
	role         = flag.String("role", "taskd", "ClientInfo.role")
	stopCode     = flag.Int("stop-code", 0, "ReportStopComplete code after stopTrain")
	strategies   = flag.String("strategies", "retry,recover", "ReportRecoverStrategy after globalFault")
	hotSwitch    = flag.String("hot-switch-strategies", "migration", "ReportRecoverStrategy after the hot switch signal")
	statusCode   = flag.Int("status-code", 0, "ReportRecoverStatus code after changeStrategy")
	statusDelay  = flag.Duration("status-delay", 0, "wait this long before ReportRecoverStatus (the new processes joining)")
	processFault = flag.Bool("process-fault", true, "ReportProcessFault after preExitProcess (MindIO, when its processes exit)")
	duration     = flag.Duration("duration", 10*time.Minute, "exit after this long")
	dumpCode     = flag.Int("dump-code", 0, "ReportRecoverStatus code (strategy dump) after saveAndExit: MindIO's dump result")
	dumpReport   = flag.Bool("dump-report", true, "ReportRecoverStatus after saveAndExit (MindIO, when its dump ends)")
	dumpDelay    = flag.Duration("dump-delay", 0, "wait this long before the dump's ReportRecoverStatus after saveAndExit (MindIO dumping)")
	localAddr    = flag.String("local-addr", "", "bind every connection to this local address (a TaskD inside a pod calls from the pod's IP; tests use a 127.0.0.x alias)")
	stressCodes  = flag.String("stress-codes", "", "stress test result code per rank, rank:code[,...] (others answer \"0\"): 1 exec fail, 2 fault found, 3 timeout, 4 voltage recovery failed")
	switchResult = flag.Bool("switch-result", true, "ReplySwitchNicResult result after a NIC switch")
	stopDelay    = flag.Duration("stop-train-delay", 0, "wait this long before ReportStopComplete after a stopTrain with stop_train (not pause_train)")
	omReplyDelay = flag.Duration("om-reply-delay", 0, "wait this long before ReplyStressTestResult / ReplySwitchNicResult (the agents at work)")
	omNotify     = flag.Bool("om-notify", true, "subscribe SubscribeNotifyExecStressTest and SubscribeNotifySwitch as TaskD's manager does")
	scaleInCode  = flag.Int("scale-in-code", -1, "ReportRecoverStatus code (strategy downgrade) after a scale-in; -1: -status-code")
	scaleOutCode = flag.Int("scale-out-code", -1, "ReportRecoverStatus code (strategy upgrade) after a scale-out; -1: -status-code")
	recoverReply = flag.Bool("recover-report", true, "ReportRecoverStatus after changeStrategy recover (false: MindIO still waits for the replaced pods' processes)")
	withhold     = flag.String("withhold", "", "reports never sent, comma-separated: strategy (ReportRecoverStrategy after globalFault), hot-switch (after the hot switch signal), retry / downgrade / upgrade / migration (ReportRecoverStatus of that changeStrategy), scale-in-status (with -isolate-ranks: the final downgrade status after faultNodesExit)")
	isolateRanks = flag.String("isolate-ranks", "", "ranks MindIO isolates on a scale-in, rank[,rank]: its first answer to downgrade is code 201 with these IsolateRankIds, the final downgrade status follows the faultNodesExit")
)

var out = struct {
	sync.Mutex
	enc *json.Encoder
}{enc: json.NewEncoder(os.Stdout)}

func emit(event string, fields map[string]any) {
	if fields == nil {
		fields = map[string]any{}
	}
	fields["t"] = time.Now().UnixMilli()
	fields["event"] = event
	out.Lock()
	defer out.Unlock()
	_ = out.enc.Encode(fields)
}

func ranks(rs []*pb.FaultRank) []map[string]string {
	list := make([]map[string]string, 0, len(rs))
	for _, r := range rs {
		list = append(list, map[string]string{"rankId": r.RankId, "faultType": r.FaultType})
	}
	return list
}

// TaskD rebuilds fault ranks from a map rank -> type (utils.GetFaultRanksMapByList), so the order
// it reports in is the map's; sorted here for stable output.
func copyRanks(rs []*pb.FaultRank) []*pb.FaultRank {
	list := make([]*pb.FaultRank, 0, len(rs))
	for _, r := range rs {
		list = append(list, &pb.FaultRank{RankId: r.RankId, FaultType: r.FaultType})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].RankId < list[j].RankId })
	return list
}

// dialOptions: plaintext, as TaskD; with -local-addr, connections leave from that address.
func dialOptions() []grpc.DialOption {
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if *localAddr != "" {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(*localAddr)}}
		opts = append(opts, grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", a)
		}))
	}
	return opts
}

// report sends one report as ReportControllerInfoToClusterd does: a fresh connection, tries until
// one call returns without a transport error (the reply code is not looked at).
func report(ctx context.Context, rpc string, call func(pb.RecoverClient) (*pb.Status, error)) {
	conn, err := grpc.Dial(*addr, dialOptions()...)
	if err != nil {
		emit("report", map[string]any{"rpc": rpc, "error": err.Error()})
		return
	}
	defer conn.Close()
	client := pb.NewRecoverClient(conn)
	for try := 1; try <= maxSendTimes+1; try++ {
		st, err := call(client)
		if err == nil {
			emit("report", map[string]any{"rpc": rpc, "code": st.GetCode(), "info": st.GetInfo(), "tries": try})
			return
		}
		if try == maxSendTimes+1 {
			emit("report", map[string]any{"rpc": rpc, "error": err.Error(), "tries": try})
		}
	}
}

type agent struct {
	ctx      context.Context
	lastUUID string // prerecover.go: acts when Uuid != lastUuid, lastUuid starts ""
	dumpUUID string // recover.go checkSaveAndExit: its own rp.uuid, starting ""
	mu       sync.Mutex
}

func (a *agent) fresh(s *pb.ProcessManageSignal) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s.Uuid == a.lastUUID {
		return false
	}
	a.lastUUID = s.Uuid
	return true
}

func (a *agent) onSignal(s *pb.ProcessManageSignal) {
	ctx := a.ctx
	switch s.SignalType {
	case "preExitProcess":
		if !a.fresh(s) || !*processFault {
			return
		}
		report(ctx, "ReportProcessFault", func(c pb.RecoverClient) (*pb.Status, error) {
			return c.ReportProcessFault(ctx, &pb.ProcessFaultRequest{JobId: *jobID, FaultRanks: copyRanks(s.FaultRanks)})
		})
	case "stopTrain":
		for _, act := range s.Actions {
			if act == "stop_train" {
				time.Sleep(*stopDelay)
			}
		}
		report(ctx, "ReportStopComplete", func(c pb.RecoverClient) (*pb.Status, error) {
			return c.ReportStopComplete(ctx, &pb.StopCompleteRequest{JobId: *jobID, Status: &pb.Status{Code: int32(*stopCode), Info: "stop"}, FaultRanks: copyRanks(s.FaultRanks)})
		})
	case "globalFault":
		if !a.fresh(s) || withheld("strategy") {
			return
		}
		report(ctx, "ReportRecoverStrategy", func(c pb.RecoverClient) (*pb.Status, error) {
			return c.ReportRecoverStrategy(ctx, &pb.RecoverStrategyRequest{JobId: *jobID, Strategies: strings.Split(*strategies, ","), FaultRanks: copyRanks(s.FaultRanks)})
		})
	case "hot-switch":
		for _, act := range s.Actions {
			if act == "hot switch" && !withheld("hot-switch") {
				report(ctx, "ReportRecoverStrategy", func(c pb.RecoverClient) (*pb.Status, error) {
					return c.ReportRecoverStrategy(ctx, &pb.RecoverStrategyRequest{JobId: *jobID, Strategies: strings.Split(*hotSwitch, ","), FaultRanks: copyRanks(s.FaultRanks)})
				})
			}
		}
	case "saveAndExit":
		// TaskD's recover plugin acts on a saveAndExit whose uuid differs from the last (checkSaveAndExit);
		// MindIO dumps (tft_notify_controller_dump) and its result callback reports strategy dump.
		a.mu.Lock()
		seen := s.Uuid == a.dumpUUID
		a.dumpUUID = s.Uuid
		a.mu.Unlock()
		if seen || !*dumpReport {
			return
		}
		time.Sleep(*dumpDelay)
		report(ctx, "ReportRecoverStatus", func(c pb.RecoverClient) (*pb.Status, error) {
			return c.ReportRecoverStatus(ctx, &pb.RecoverStatusRequest{JobId: *jobID, Status: &pb.Status{Code: int32(*dumpCode), Info: ""}, Strategy: "dump"})
		})
	case "changeStrategy":
		if withheld(s.ChangeStrategy) {
			return
		}
		switch s.ChangeStrategy {
		case "downgrade":
			time.Sleep(*statusDelay)
			if *isolateRanks != "" {
				// TaskD's elastic-training plugin passes MindIO's answer on with IsolateRankIds
				// (manager.go reportRecoverStatus); 201: these ranks must exit first.
				a.reportStatus("downgrade", 201, strings.Split(*isolateRanks, ","))
				return
			}
			a.reportStatus("downgrade", codeOr(*scaleInCode), nil)
		case "upgrade":
			time.Sleep(*statusDelay)
			a.reportStatus("upgrade", codeOr(*scaleOutCode), nil)
		case "retry", "recover", "dump", "migration", "continue":
			if s.ChangeStrategy == "recover" && !*recoverReply {
				return
			}
			time.Sleep(*statusDelay)
			a.reportStatus(s.ChangeStrategy, *statusCode, nil)
		}
	case "faultNodesExit":
		// The isolated ranks' processes exit; MindIO then reports the scale-in's result.
		if *isolateRanks != "" && !withheld("scale-in-status") {
			a.reportStatus("downgrade", codeOr(*scaleInCode), nil)
		}
	}
}

// withheld: -withhold names this report (MindIO never answering it).
func withheld(what string) bool {
	for _, w := range strings.Split(*withhold, ",") {
		if w == what {
			return true
		}
	}
	return false
}

func codeOr(code int) int {
	if code < 0 {
		return *statusCode
	}
	return code
}

func (a *agent) reportStatus(strategy string, code int, isolate []string) {
	ctx := a.ctx
	report(ctx, "ReportRecoverStatus", func(c pb.RecoverClient) (*pb.Status, error) {
		return c.ReportRecoverStatus(ctx, &pb.RecoverStatusRequest{JobId: *jobID, Status: &pb.Status{Code: int32(code), Info: ""}, Strategy: strategy, IsolateRankIds: isolate})
	})
}

// command runs one stdin line. `process-fault <rank>:<type>[,<rank>:<type>...]`: MindIO found these
// faults in the business plane (a UCE it will retry is type 0) and TaskD reports them unprompted
// (ReportProcessFault), as it does outside any signal.
func (a *agent) command(line string) {
	f := strings.Fields(line)
	if len(f) == 2 && f[0] == "stress-test" {
		go a.stressTest(f[1])
		return
	}
	if len(f) == 2 && f[0] == "switch-nic" {
		go a.switchNic(f[1])
		return
	}
	if len(f) != 2 || f[0] != "process-fault" {
		if line != "" {
			emit("command", map[string]any{"error": "unknown command " + line})
		}
		return
	}
	var rs []*pb.FaultRank
	for _, p := range strings.Split(f[1], ",") {
		rank, typ, _ := strings.Cut(p, ":")
		rs = append(rs, &pb.FaultRank{RankId: rank, FaultType: typ})
	}
	go report(a.ctx, "ReportProcessFault", func(c pb.RecoverClient) (*pb.Status, error) {
		return c.ReportProcessFault(a.ctx, &pb.ProcessFaultRequest{JobId: *jobID, FaultRanks: rs})
	})
}

// ---- O&M: the operator's side (StressTest / SwitchNicTrack and their result streams) ----

// stressTest: `all:<op>[,<op>]` (allNodesOps) or `<node>:<op>[,<op>][;<node>:...]`.
func (a *agent) stressTest(arg string) {
	req := &pb.StressTestParam{JobID: *jobID, StressParam: map[string]*pb.StressOpList{}}
	for _, part := range strings.Split(arg, ";") {
		node, list, _ := strings.Cut(part, ":")
		var ops []int64
		for _, o := range strings.Split(list, ",") {
			var n int64
			fmt.Sscan(o, &n)
			ops = append(ops, n)
		}
		if node == "all" {
			req.AllNodesOps = ops
		} else {
			req.StressParam[node] = &pb.StressOpList{Ops: ops}
		}
	}
	a.omCall("StressTest", func(c pb.RecoverClient) (*pb.Status, error) { return c.StressTest(a.ctx, req) }, func(c pb.RecoverClient) (func() (string, error), error) {
		st, err := c.SubscribeStressTestResponse(a.ctx, &pb.StressTestRequest{JobID: *jobID})
		if err != nil {
			return nil, err
		}
		return func() (string, error) { r, err := st.Recv(); return r.GetMsg(), err }, nil
	})
}

// switchNic: `<node>:<dev>=<true|false>[,...][;<node>:...]`.
func (a *agent) switchNic(arg string) {
	req := &pb.SwitchNics{JobID: *jobID, NicOps: map[string]*pb.DeviceList{}}
	for _, part := range strings.Split(arg, ";") {
		node, list, _ := strings.Cut(part, ":")
		dl := &pb.DeviceList{}
		for _, d := range strings.Split(list, ",") {
			dev, op, _ := strings.Cut(d, "=")
			dl.Dev = append(dl.Dev, dev)
			dl.Op = append(dl.Op, op == "true")
		}
		req.NicOps[node] = dl
	}
	a.omCall("SwitchNicTrack", func(c pb.RecoverClient) (*pb.Status, error) { return c.SwitchNicTrack(a.ctx, req) }, func(c pb.RecoverClient) (func() (string, error), error) {
		st, err := c.SubscribeSwitchNicSignal(a.ctx, &pb.SwitchNicRequest{JobID: *jobID})
		if err != nil {
			return nil, err
		}
		return func() (string, error) { r, err := st.Recv(); return r.GetMsg(), err }, nil
	})
}

// omCall: the request, then the result stream again and again (one message each) until it is refused.
func (a *agent) omCall(rpc string, call func(pb.RecoverClient) (*pb.Status, error), results func(pb.RecoverClient) (func() (string, error), error)) {
	conn, err := grpc.Dial(*addr, dialOptions()...)
	if err != nil {
		emit("om", map[string]any{"rpc": rpc, "error": err.Error()})
		return
	}
	defer conn.Close()
	client := pb.NewRecoverClient(conn)
	st, err := call(client)
	emit("om", map[string]any{"rpc": rpc, "code": st.GetCode(), "info": st.GetInfo(), "error": errString(err)})
	if err != nil || st.GetCode() != 0 {
		return
	}
	for a.ctx.Err() == nil {
		recv, err := results(client)
		if err != nil {
			emit("om-result", map[string]any{"rpc": rpc, "error": err.Error()})
			return
		}
		msg, err := recv()
		if err != nil {
			// A refusal (no operation running any more) ends the loop; an empty end (reset) is looked at again.
			emit("om-result", map[string]any{"rpc": rpc, "end": errString(err)})
			if err != io.EOF {
				return
			}
		} else {
			emit("om-result", map[string]any{"rpc": rpc, "msg": msg})
		}
		time.Sleep(time.Second)
	}
}

// ---- O&M: TaskD's side (manager.go subscribeStressTest / subscribeSwitchNic, replyToClusterD) ----

func (a *agent) subscribeNotify(client pb.RecoverClient, info *pb.ClientInfo, kind string) {
	for a.ctx.Err() == nil {
		a.listenNotify(client, info, kind)
		select {
		case <-a.ctx.Done():
		case <-time.After(time.Second): // waitGapTime
		}
	}
}

func (a *agent) listenNotify(client pb.RecoverClient, info *pb.ClientInfo, kind string) {
	var recv func() (any, error)
	if kind == "stress" {
		st, err := client.SubscribeNotifyExecStressTest(a.ctx, info)
		if err != nil {
			return
		}
		recv = func() (any, error) { return st.Recv() }
	} else {
		st, err := client.SubscribeNotifySwitch(a.ctx, info)
		if err != nil {
			return
		}
		recv = func() (any, error) { return st.Recv() }
	}
	for {
		m, err := recv()
		if err != nil {
			return // EOF or error: subscribe again, as TaskD
		}
		switch v := m.(type) {
		case *pb.StressTestRankParams:
			params := map[string][]int64{}
			for rank, ops := range v.StressParam {
				params[rank] = ops.GetOps()
			}
			emit("stress-notify", map[string]any{"jobId": v.JobId, "params": params})
			go a.replyStress(v)
		case *pb.SwitchRankList:
			emit("switch-notify", map[string]any{"jobId": v.JobId, "ranks": v.RankID, "ops": v.Op})
			go a.replySwitch()
		}
	}
}

func (a *agent) replyStress(p *pb.StressTestRankParams) {
	time.Sleep(*omReplyDelay)
	codes := map[string]string{}
	for _, rc := range strings.Split(*stressCodes, ",") {
		if r, c, ok := strings.Cut(rc, ":"); ok {
			codes[r] = c
		}
	}
	res := &pb.StressTestResult{JobId: *jobID, StressResult: map[string]*pb.StressTestRankResult{}}
	for rank, ops := range p.StressParam {
		code := codes[rank]
		if code == "" {
			code = "0"
		}
		rr := &pb.StressTestRankResult{RankResult: map[string]*pb.StressTestOpResult{}}
		for _, op := range ops.GetOps() {
			rr.RankResult[fmt.Sprint(op)] = &pb.StressTestOpResult{Code: code, Result: "done"}
		}
		res.StressResult[rank] = rr
	}
	report(a.ctx, "ReplyStressTestResult", func(c pb.RecoverClient) (*pb.Status, error) { return c.ReplyStressTestResult(a.ctx, res) })
}

func (a *agent) replySwitch() {
	time.Sleep(*omReplyDelay)
	report(a.ctx, "ReplySwitchNicResult", func(c pb.RecoverClient) (*pb.Status, error) {
		return c.ReplySwitchNicResult(a.ctx, &pb.SwitchResult{JobId: *jobID, Result: *switchResult})
	})
}

// startSubscribe: manager.go's, returning when the stream ends.
func (a *agent) startSubscribe(client pb.RecoverClient, info *pb.ClientInfo) {
	st, err := client.Init(a.ctx, info)
	emit("init", map[string]any{"code": st.GetCode(), "info": st.GetInfo(), "error": errString(err)})
	if err != nil || st.GetCode() != 0 {
		return
	}
	st, err = client.Register(a.ctx, info)
	emit("register", map[string]any{"code": st.GetCode(), "info": st.GetInfo(), "error": errString(err)})
	if err != nil || st.GetCode() != 0 {
		return
	}
	stream, err := client.SubscribeProcessManageSignal(a.ctx, info)
	if err != nil {
		emit("stream-end", map[string]any{"error": err.Error()})
		return
	}
	emit("subscribe", nil)
	for {
		s, err := stream.Recv()
		if err == io.EOF {
			emit("stream-end", map[string]any{"eof": true})
			return
		}
		if err != nil {
			emit("stream-end", map[string]any{"error": err.Error()})
			return
		}
		if s.SignalType == "keep-alive" {
			emit("keepalive", map[string]any{"uuid": s.Uuid})
			continue
		}
		emit("signal", map[string]any{
			"uuid": s.Uuid, "jobId": s.JobId, "signalType": s.SignalType, "actions": s.Actions, "changeStrategy": s.ChangeStrategy,
			"faultRanks": ranks(s.FaultRanks), "nodeRankIds": s.NodeRankIds, "extraParams": s.ExtraParams, "timeout": s.Timeout,
		})
		go a.onSignal(s)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func main() {
	flag.Parse()
	if *jobID == "" {
		fmt.Fprintln(os.Stderr, "-job is required")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	conn, err := grpc.Dial(*addr, dialOptions()...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer conn.Close()
	a := &agent{ctx: ctx}
	client := pb.NewRecoverClient(conn)
	info := &pb.ClientInfo{JobId: *jobID, Role: *role}
	go func() { // stdin: commands, one a line; closed = the test is done with us
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			a.command(strings.TrimSpace(sc.Text()))
		}
		cancel()
	}()
	if *omNotify {
		go a.subscribeNotify(client, info, "stress")
		go a.subscribeNotify(client, info, "switch")
	}
	for ctx.Err() == nil {
		a.startSubscribe(client, info)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
