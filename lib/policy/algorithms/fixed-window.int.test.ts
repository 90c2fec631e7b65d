import { paritySuite } from "./parity-suite";

paritySuite("fixed_window");
