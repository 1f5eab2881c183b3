package tracefetch

// The catalog: every trace the docs use, pinned to a commit of its
// repository, with each file's size and SHA-256. The hashes were computed
// from the files at those commits and agree with ../shared/traces
// (SHA256SUMS and PROVENANCE.md).

// rawBase is where GitHub serves a file of a repository at a commit.
const rawBase = "https://raw.githubusercontent.com"

var catalog = []Trace{
	mooncakeFAST25("mooncake", "Mooncake FAST'25 synthetic trace: 3,993 requests, 512-token prefix blocks",
		File{"synthetic_trace.jsonl", "FAST25-release/traces/synthetic_trace.jsonl", 1136313, "bd070915a98fc0ed264d7cfef2ce746002eb3076a695ec31ba2674c0111ec131"}),
	mooncakeFAST25("mooncake-conversation", "Mooncake FAST'25 conversation trace",
		File{"conversation_trace.jsonl", "FAST25-release/traces/conversation_trace.jsonl", 3029533, "b8cbb061a85206d729d91cdc2981f43c9e0d99209dce588d3af5f7934408b9df"}),
	{
		Name:    "weka-claude-code",
		Title:   "Claude Code sessions of kv-cache-tester: 40 sessions (every 18th of the published set), ~2,800 requests, 64-token blocks",
		Repo:    "callanjfox/kv-cache-tester",
		Commit:  "c9b3da54fc2f555942720527b86c1979fcae9bb2",
		Licence: "Apache-2.0",
		Main:    "", // the directory
		Files: []File{
			{"LICENSE", "LICENSE", 10759, "7a4cc3b22164f4accb2e7cecee4dc048c0fc4a2aa8a093e1c831569315b8561b"},
			{"trace_0018.json", "traces/trace_0018.json", 2513236, "ea00764614cdd0d676bf67cb3c3932e0ec831e053677f28c2870e248394959bb"},
			{"trace_0036.json", "traces/trace_0036.json", 43424, "9a714760cd1a5ae14f2af5b5ea7f69a85cfa6370b17a1cd55ec20baa61d5d9b9"},
			{"trace_0054.json", "traces/trace_0054.json", 186761, "b7c6dd7197ac77fd1532ddfd0bcd5eafa85bdad133f96bfef86c3fd12c504c36"},
			{"trace_0072.json", "traces/trace_0072.json", 89472, "ff58ecc4764ce1d386190dff211c01ffd1eb63b7ffad20db1092cc69dda4fc50"},
			{"trace_0090.json", "traces/trace_0090.json", 278003, "8372771c679056cbda2e14cc1603f6ba5a3f77533ebc92c99b8d4dafa9b1fef7"},
			{"trace_0108.json", "traces/trace_0108.json", 114800, "6ab77b2935df877bdbf261b4dad6e69476ef43664e8189f876c14f23b8448595"},
			{"trace_0126.json", "traces/trace_0126.json", 108976, "857f49bcdf5d1e70ea1febe10d20cb5890dd56ad5d78cafb1ed5ee7f75b8be04"},
			{"trace_0144.json", "traces/trace_0144.json", 220646, "548431937c66113e16086eae746c9587f9b886d86becde245c2a23482df6647d"},
			{"trace_0162.json", "traces/trace_0162.json", 1427788, "7ea14cf796c0c2fc100485a4e5078f56b2793963d3f2df77e45f6d46514e47f6"},
			{"trace_0180.json", "traces/trace_0180.json", 118799, "b1eb6cc5a46c2f5d13109ee48aa2dd0a8e39093d6c4c8dac5dafd859cd94f6ac"},
			{"trace_0198.json", "traces/trace_0198.json", 2506933, "7cbf1a681617c44ba472d832e82fabcfdc726b1225974a94622e9a6138661a26"},
			{"trace_0216.json", "traces/trace_0216.json", 417426, "09f6dd1340396030e9b0d68ff6aaac32f13aef62528eed2e6e83600d8ded43a4"},
			{"trace_0234.json", "traces/trace_0234.json", 126449, "2c05d4525c0fa1d6ad966d48720dc9572a3f518919446f7acce73914cc7fa5c3"},
			{"trace_0252.json", "traces/trace_0252.json", 967225, "edf775726d757e8aa4c7e9a86ee8c2fba0c9b04da638c132264bf2be5de184ef"},
			{"trace_0270.json", "traces/trace_0270.json", 2057303, "f0dffa604ebf0ee85cc2d204395d309f72643a07243702ab5d1a71227431427f"},
			{"trace_0288.json", "traces/trace_0288.json", 6751, "8cf3ebba1d2bd039e99e6fbf50e7598bcdfa3b9579365a2208a0fca588aa048b"},
			{"trace_0306.json", "traces/trace_0306.json", 61290, "f1ca2ca216576a30d48ac13b67713a34bd28c80cfcc64292d09db8883a42dd2f"},
			{"trace_0324.json", "traces/trace_0324.json", 278372, "314e24f34795587009e1aa1d71b8dfe25368169cae2d89c27d8bcf02bdd05e85"},
			{"trace_0342.json", "traces/trace_0342.json", 420778, "4831030a315f87d120f465e2d882d571bde7cd6fc403f2525d3abcf8b98de6f7"},
			{"trace_0360.json", "traces/trace_0360.json", 176280, "ae9e39364f185dc1708aac014791b763849620a6e25326f5bcdc6e34be152c52"},
			{"trace_0396.json", "traces/trace_0396.json", 503261, "664e4a5e87d56416857ecd05c272ecdce3c4b0082493e83b1c0254bfd49e8bbc"},
			{"trace_0414.json", "traces/trace_0414.json", 1448693, "c46478f0a1707ec49717741f30ad1c97e9c1949bb76bcb4d9d1428e8665bcc9e"},
			{"trace_0432.json", "traces/trace_0432.json", 51176, "df0aa56168a12895e7e1f5cac865977d9da0531a9ccd53afb322548a710d930a"},
			{"trace_0450.json", "traces/trace_0450.json", 4006021, "65bcb7875de11446788253435b16b85a335472bb7b1ca985eab0fc1885be43e8"},
			{"trace_0468.json", "traces/trace_0468.json", 1072584, "22b00a344849142e0fe420d184f0ccf45699561add230f7b459bee200f7c5eff"},
			{"trace_0486.json", "traces/trace_0486.json", 160858, "b9a43e225d95b3bfa650ce0702c1b90366e159f4b6f27a71aed5e9e3f5e3077b"},
			{"trace_0504.json", "traces/trace_0504.json", 2707, "a902593802a8d08f95e4ad9f08a4a254d6511ad8d72faa403945f61c2cbef58f"},
			{"trace_0522.json", "traces/trace_0522.json", 1028004, "48d7b81b439d45b019d704ba5cb82671c878f543a505f49728414443d6f4244b"},
			{"trace_0540.json", "traces/trace_0540.json", 2475609, "395cdafbbcabf8ec85e79b6398fb20874dbf89c7c02a6a620e5c345f15db261d"},
			{"trace_0558.json", "traces/trace_0558.json", 564242, "95c4081dbe2f851275884342d08d04952c8eb0c0ce78c7644ac6c544d342b527"},
			{"trace_0576.json", "traces/trace_0576.json", 78632, "a8312b5aeefbadb65435b8df9102e79ddcf0203f0d05dd563da5c64e5fc29a09"},
			{"trace_0594.json", "traces/trace_0594.json", 712092, "6c7ccd8ebdf9f5b25eeddcaec9d5488df4c6c8b8ededbe846498a807fe1d5b64"},
			{"trace_0612.json", "traces/trace_0612.json", 338510, "5e03943d85314177b96557d3699bb78a3bf62610042eb764b4f4d1343609ebf0"},
			{"trace_0630.json", "traces/trace_0630.json", 59396, "b54e8548b1729086671633b3e2eaff2c4b8096d4beb1fd6a7a9b3c850ac5bbbd"},
			{"trace_0648.json", "traces/trace_0648.json", 1637495, "34b1893f2d0febb7b5c7118e39fa9d2a04dfb2ac90111c8d5f61630f6f8e6330"},
			{"trace_0666.json", "traces/trace_0666.json", 101619, "81178ea8ad8a4e2966d77cef19c562f9b6aabc8eb003bb10eb4cb798953fbb6b"},
			{"trace_0684.json", "traces/trace_0684.json", 50839, "5dde456e22b32259b57b82f7833f1a3ee0b280874824b104e5daf9dee87e2c3d"},
			{"trace_0702.json", "traces/trace_0702.json", 21180, "4dea8fca7498454eb607b6609cb50bda05be5a787c63e2185dfcf3221746f151"},
			{"trace_0720.json", "traces/trace_0720.json", 39288, "63bd7a1cc28067f8f7da361405141f9ee20efe149fd17a91cd0763f6db03b1f2"},
			{"trace_0738.json", "traces/trace_0738.json", 1041880, "349ad7797ffd62d8ee32c3238ab83200534450f2fedbe6c08b57dead1be1a449"},
		},
	},
	azure2023("azure-2023", "Azure LLM inference trace 2023, code: 8,819 requests",
		File{"AzureLLMInferenceTrace_code.csv", "data/AzureLLMInferenceTrace_code.csv", 320117, "54e9a6d2a4bd06ba1e060304b900abbc74cbea53de96506e60fe5bb4f2277fb6"}),
	azure2023("azure-2023-conv", "Azure LLM inference trace 2023, conversation",
		File{"AzureLLMInferenceTrace_conv.csv", "data/AzureLLMInferenceTrace_conv.csv", 719188, "2f1e5b666d4e3055fdbba98598ce2ec307767b9064e03e2fa46676dbcc7d0bf8"}),
	{
		Name:    "tracelab",
		Title:   "TraceLab sanitized example sessions: 19 rounds, 2 sessions",
		Repo:    "uw-syfi/TraceLab",
		Commit:  "9fb3d766f7ef228b1c3dd554c7ad4ba01f8e7e3f",
		Licence: "CC-BY-4.0",
		Main:    "round_trace.sanitized.jsonl",
		Files: []File{
			{"round_trace.sanitized.jsonl", "example_sessions/sanitized/round_trace.jsonl", 32960, "314c49483148fe68e230a683f739e3e6e68d478948ecf342739596f30af36b57"},
			{"README.md", "example_sessions/sanitized/README.md", 3123, "41d8407da1dbedfcb08480e90f209e42363e2e5fb9fc838a2f96fc3066b80998"},
			{"LICENSE-DATASET.md", "LICENSE-DATASET.md", 2061, "1e96a0ec55f98ee0e4e2432626c0201104ebfb7f98cecf0a31d5313ddad92e9a"},
		},
	},
}

// mooncakeFAST25 is one trace file of Mooncake's FAST'25 release, at the
// pinned commit: the traces of one repository share its source, written once.
func mooncakeFAST25(name, title string, trace File) Trace {
	return Trace{
		Name: name, Title: title,
		Repo:    "kvcache-ai/Mooncake",
		Commit:  "3cca71daccf2a7afb8fe3f0295358f70e3a69fdb",
		Licence: "Apache-2.0",
		Main:    trace.Name,
		Files:   []File{trace},
	}
}

// azure2023 is one trace file of the Azure LLM inference dataset 2023, at
// the pinned commit, with the repository's licence file.
func azure2023(name, title string, trace File) Trace {
	return Trace{
		Name: name, Title: title,
		Repo:    "Azure/AzurePublicDataset",
		Commit:  "790921015d50dd6aae7f7e47f39ba0e235ad6b08",
		Licence: "CC-BY-4.0",
		Main:    trace.Name,
		Files: []File{
			trace,
			{"LICENSE", "LICENSE", 18653, "9bbc1ea9fe5c96df01b311a2ac864d5b18fc87b9948bfd14770e4b44db755ee9"},
		},
	}
}
