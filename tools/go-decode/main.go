// go-decode: a test peer that decodes what clusterd-ts writes for Volcano with Go's encoding/json
// into the Go types the consumers use (int64 times, int32 ids, uint switch fields), including the
// JSON nested in string fields. Reads the value on stdin, the kind (device|switch|node) as argument;
// exits 1 with Go's error when any of it does not decode. Own structs, same field types as the real
// readers (docs/formats.md#cluster-info); nothing copied from MindCluster.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

type faultTimeAndLevel struct {
	FaultTime  int64  `json:"fault_time"`
	FaultLevel string `json:"fault_level"`
}

type deviceFault struct {
	FaultType            string                       `json:"fault_type"`
	NPUName              string                       `json:"npu_name"`
	LargeModelFaultLevel string                       `json:"large_model_fault_level"`
	FaultLevel           string                       `json:"fault_level"`
	FaultHandling        string                       `json:"fault_handling"`
	FaultCode            string                       `json:"fault_code"`
	FaultTimeAndLevelMap map[string]faultTimeAndLevel `json:"fault_time_and_level_map"`
}

type deviceEntry struct {
	DeviceList  map[string]string
	UpdateTime  int64
	CmName      string
	SuperPodID  int32
	RackID      int32
	ServerIndex int32
}

type switchEvent struct {
	EventType          uint
	AssembledFaultCode string
	PeerPortDevice     uint
	PeerPortId         uint
	SwitchChipId       uint
	SwitchPortId       uint
	Severity           uint
	Assertion          uint
	AlarmRaisedTime    int64
}

type switchEntry struct {
	FaultCode            []string
	FaultLevel           string
	UpdateTime           int64
	NodeStatus           string
	FaultTimeAndLevelMap map[string]faultTimeAndLevel
	CmName               string
}

type nodeEntry struct {
	FaultDevList []struct {
		DeviceType string
		DeviceId   int64
		FaultCode  []string
		FaultLevel string
	}
	NodeStatus string
	CmName     string
	UpdateTime int64
}

func decode(kind string, data []byte) error {
	switch kind {
	case "device":
		m := map[string]deviceEntry{}
		if err := json.Unmarshal(data, &m); err != nil {
			return err
		}
		for k, e := range m {
			for key, v := range e.DeviceList {
				if strings.HasSuffix(key, "-Fault") && v != "" {
					var faults []deviceFault
					if err := json.Unmarshal([]byte(v), &faults); err != nil {
						return fmt.Errorf("%s %s: %w", k, key, err)
					}
				}
			}
		}
	case "switch":
		m := map[string]switchEntry{}
		if err := json.Unmarshal(data, &m); err != nil {
			return err
		}
		for k, e := range m {
			for i, c := range e.FaultCode {
				var ev switchEvent
				if err := json.Unmarshal([]byte(c), &ev); err != nil {
					return fmt.Errorf("%s FaultCode[%d]: %w", k, i, err)
				}
			}
		}
	case "node":
		m := map[string]nodeEntry{}
		return json.Unmarshal(data, &m)
	default:
		return fmt.Errorf("unknown kind %q", kind)
	}
	return nil
}

func main() {
	data, err := io.ReadAll(os.Stdin)
	if err == nil && len(os.Args) == 2 {
		err = decode(os.Args[1], data)
	} else if err == nil {
		err = fmt.Errorf("usage: go-decode device|switch|node < value")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
