import { paritySuite } from "./parity-suite";

paritySuite("sliding_window_counter");
