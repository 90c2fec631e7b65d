import { paritySuite } from "../../store/testing/parity-suite";

paritySuite("sliding_window_log");
