-- NVIDIA data-centre and consumer GPUs: Volta .. Blackwell.
--
-- Conventions used in this file (and in the other data files):
--  * Peaks are DENSE. NVIDIA datasheets from Ampere on print Tensor Core figures "with sparsity"
--    (marked *); where only that figure is printed it is halved here and the comment says so.
--  * peak has one row per (product, format), so it holds the best rate any unit reaches for that
--    format; op_class says which units. Where the other class has a published rate too (e.g.
--    FP64 on CUDA cores vs FP64 Tensor Cores) that rate is given in the comment.
--  * GeForce parts run FP16/FP8 Tensor Core math at half rate when accumulating in FP32. libhpf
--    accumulates in FP32, so those peaks are the "with FP32 Accumulate" rows of the whitepapers;
--    the FP16-accumulate rate is in the comment. Data-centre parts run both at full rate.
--  * memory_gib is the datasheet's "GB" of device memory: HBM/GDDR capacities are binary, so
--    the printed number is GiB. Bandwidth is decimal GB/s as printed.
--  * FP64 of parts whose datasheet prints none is derived from the CUDA C++ Programming Guide
--    throughput table (2 FP64 FMA results per clock per SM on compute capability 7.5, 8.6, 8.9
--    and 12.0): SMs x 2 x 2 FLOP x boost clock.
--
-- support levels (all data files): 'native' = the units take the format as an operand;
-- 'emulated' = they do not, but the format widens to one they do take, either by a hardware
-- conversion instruction (FP16 -> FP32, FP8 -> FP16 on sm_89+, FP4 -> FP16 on sm_100/sm_120) or
-- by trivial bit manipulation (BF16/TF32 -> FP32 is a shift/no-op, INT4 -> INT8 a sign-extend);
-- 'absent' = neither (FP8/FP4 without a conversion instruction count as absent).

INSERT INTO source (id, title, url) VALUES
  ('nvidia-cuda-programming-guide', 'CUDA C++ Programming Guide', 'https://docs.nvidia.com/cuda/cuda-c-programming-guide/'),
  ('nvidia-ptx-isa', 'Parallel Thread Execution ISA', 'https://docs.nvidia.com/cuda/parallel-thread-execution/'),
  ('nvidia-volta-whitepaper', 'NVIDIA Tesla V100 GPU Architecture', 'https://images.nvidia.com/content/volta-architecture/pdf/volta-architecture-whitepaper.pdf'),
  ('nvidia-v100-datasheet', 'NVIDIA Tesla V100 GPU Accelerator Datasheet', NULL),
  ('nvidia-turing-whitepaper', 'NVIDIA Turing GPU Architecture', NULL),
  ('nvidia-t4-datasheet', 'NVIDIA T4 Tensor Core GPU Datasheet', NULL),
  ('nvidia-ampere-whitepaper', 'NVIDIA A100 Tensor Core GPU Architecture', NULL),
  ('nvidia-a100-datasheet', 'NVIDIA A100 Tensor Core GPU Datasheet', NULL),
  ('nvidia-a10-datasheet', 'NVIDIA A10 Tensor Core GPU Datasheet', NULL),
  ('nvidia-ga102-whitepaper', 'NVIDIA Ampere GA102 GPU Architecture', 'https://images.nvidia.com/aem-dam/en-zz/Solutions/geforce/ampere/pdf/NVIDIA-ampere-GA102-GPU-Architecture-Whitepaper-V1.pdf'),
  ('nvidia-ada-whitepaper', 'NVIDIA Ada GPU Architecture', NULL),
  ('nvidia-l4-datasheet', 'NVIDIA L4 Tensor Core GPU Datasheet', NULL),
  ('nvidia-l40s-datasheet', 'NVIDIA L40S Datasheet', NULL),
  ('nvidia-hopper-whitepaper', 'NVIDIA H100 Tensor Core GPU Architecture', NULL),
  ('nvidia-h100-datasheet', 'NVIDIA H100 Tensor Core GPU Datasheet', NULL),
  ('nvidia-h200-datasheet', 'NVIDIA H200 Tensor Core GPU Datasheet', NULL),
  ('nvidia-blackwell-datasheet', 'NVIDIA Blackwell Datasheet (GB200 NVL72 / HGX B200)', NULL),
  ('nvidia-rtx-blackwell-whitepaper', 'NVIDIA RTX Blackwell GPU Architecture', 'https://images.nvidia.com/aem-dam/Solutions/geforce/blackwell/nvidia-rtx-blackwell-gpu-architecture.pdf');

-- Architectures. Compute capabilities from the CUDA C++ Programming Guide; FP8 (E4M3/E5M2 as in
-- the OCP 8-bit floating point specification) exists from sm_89 on.
INSERT INTO architecture (name, vendor, kind, family, compute_capability, gfx_target, fp8_flavor, source) VALUES
  ('volta',              'NVIDIA', 'gpu', 'Volta',        '7.0',  NULL, 'none', 'nvidia-cuda-programming-guide'),
  ('turing',             'NVIDIA', 'gpu', 'Turing',       '7.5',  NULL, 'none', 'nvidia-cuda-programming-guide'),
  ('ampere-ga100',       'NVIDIA', 'gpu', 'Ampere',       '8.0',  NULL, 'none', 'nvidia-cuda-programming-guide'),
  ('ampere-ga10x',       'NVIDIA', 'gpu', 'Ampere',       '8.6',  NULL, 'none', 'nvidia-cuda-programming-guide'),
  ('ada',                'NVIDIA', 'gpu', 'Ada Lovelace', '8.9',  NULL, 'ocp',  'nvidia-cuda-programming-guide'),
  ('hopper',             'NVIDIA', 'gpu', 'Hopper',       '9.0',  NULL, 'ocp',  'nvidia-cuda-programming-guide'),
  ('blackwell-dc',       'NVIDIA', 'gpu', 'Blackwell',    '10.0', NULL, 'ocp',  'nvidia-cuda-programming-guide'),
  ('blackwell-consumer', 'NVIDIA', 'gpu', 'Blackwell',    '12.0', NULL, 'ocp',  'nvidia-cuda-programming-guide');

-- Support matrix, op_class 'matrix' = Tensor Cores (mma/wgmma/tcgen05 operand types, PTX ISA).
--  volta:   FP16 only (HMMA).
--  turing:  + INT8, INT4 (IMMA).
--  ga100:   + TF32, BF16, FP64 (DMMA).
--  ga10x:   as ga100 without FP64 Tensor Cores (mma.f64 compiles but runs on the FP64 units).
--  ada:     + FP8 (E4M3/E5M2).
--  hopper:  FP64 Tensor Cores again; no INT4 Tensor Core rate is published for H100/H200 and the
--           sub-byte integer mma is emulated on sm_90 -> 'emulated' (INT4 widens to INT8).
--  blackwell-dc / blackwell-consumer: + FP4 (E2M1, kind::f8f6f4 / mxf4). No INT4 rate is
--           published for B200 or RTX 5090 -> 'emulated' as on Hopper. FP6 exists on Blackwell
--           but the schema's format list has no FP6.
--  No NVIDIA Tensor Core takes FP32 operands (TF32 is the FP32-input path) -> fp32 'absent'.
INSERT INTO support (arch, op_class, format, level, source) VALUES
  ('volta', 'matrix', 'fp64', 'absent', 'nvidia-volta-whitepaper'),
  ('volta', 'matrix', 'fp32', 'absent', 'nvidia-volta-whitepaper'),
  ('volta', 'matrix', 'tf32', 'absent', 'nvidia-volta-whitepaper'),
  ('volta', 'matrix', 'bf16', 'absent', 'nvidia-volta-whitepaper'),
  ('volta', 'matrix', 'fp16', 'native', 'nvidia-volta-whitepaper'),
  ('volta', 'matrix', 'fp8',  'absent', 'nvidia-volta-whitepaper'),
  ('volta', 'matrix', 'fp4',  'absent', 'nvidia-volta-whitepaper'),
  ('volta', 'matrix', 'int8', 'absent', 'nvidia-volta-whitepaper'),
  ('volta', 'matrix', 'int4', 'absent', 'nvidia-volta-whitepaper'),

  ('turing', 'matrix', 'fp64', 'absent', 'nvidia-turing-whitepaper'),
  ('turing', 'matrix', 'fp32', 'absent', 'nvidia-turing-whitepaper'),
  ('turing', 'matrix', 'tf32', 'absent', 'nvidia-turing-whitepaper'),
  ('turing', 'matrix', 'bf16', 'absent', 'nvidia-turing-whitepaper'),
  ('turing', 'matrix', 'fp16', 'native', 'nvidia-turing-whitepaper'),
  ('turing', 'matrix', 'fp8',  'absent', 'nvidia-turing-whitepaper'),
  ('turing', 'matrix', 'fp4',  'absent', 'nvidia-turing-whitepaper'),
  ('turing', 'matrix', 'int8', 'native', 'nvidia-turing-whitepaper'),
  ('turing', 'matrix', 'int4', 'native', 'nvidia-turing-whitepaper'),

  ('ampere-ga100', 'matrix', 'fp64', 'native', 'nvidia-ampere-whitepaper'),
  ('ampere-ga100', 'matrix', 'fp32', 'absent', 'nvidia-ampere-whitepaper'),
  ('ampere-ga100', 'matrix', 'tf32', 'native', 'nvidia-ampere-whitepaper'),
  ('ampere-ga100', 'matrix', 'bf16', 'native', 'nvidia-ampere-whitepaper'),
  ('ampere-ga100', 'matrix', 'fp16', 'native', 'nvidia-ampere-whitepaper'),
  ('ampere-ga100', 'matrix', 'fp8',  'absent', 'nvidia-ampere-whitepaper'),
  ('ampere-ga100', 'matrix', 'fp4',  'absent', 'nvidia-ampere-whitepaper'),
  ('ampere-ga100', 'matrix', 'int8', 'native', 'nvidia-ampere-whitepaper'),
  ('ampere-ga100', 'matrix', 'int4', 'native', 'nvidia-ampere-whitepaper'),

  ('ampere-ga10x', 'matrix', 'fp64', 'absent', 'nvidia-ga102-whitepaper'),
  ('ampere-ga10x', 'matrix', 'fp32', 'absent', 'nvidia-ga102-whitepaper'),
  ('ampere-ga10x', 'matrix', 'tf32', 'native', 'nvidia-ga102-whitepaper'),
  ('ampere-ga10x', 'matrix', 'bf16', 'native', 'nvidia-ga102-whitepaper'),
  ('ampere-ga10x', 'matrix', 'fp16', 'native', 'nvidia-ga102-whitepaper'),
  ('ampere-ga10x', 'matrix', 'fp8',  'absent', 'nvidia-ga102-whitepaper'),
  ('ampere-ga10x', 'matrix', 'fp4',  'absent', 'nvidia-ga102-whitepaper'),
  ('ampere-ga10x', 'matrix', 'int8', 'native', 'nvidia-ga102-whitepaper'),
  ('ampere-ga10x', 'matrix', 'int4', 'native', 'nvidia-ga102-whitepaper'),

  ('ada', 'matrix', 'fp64', 'absent', 'nvidia-ada-whitepaper'),
  ('ada', 'matrix', 'fp32', 'absent', 'nvidia-ada-whitepaper'),
  ('ada', 'matrix', 'tf32', 'native', 'nvidia-ada-whitepaper'),
  ('ada', 'matrix', 'bf16', 'native', 'nvidia-ada-whitepaper'),
  ('ada', 'matrix', 'fp16', 'native', 'nvidia-ada-whitepaper'),
  ('ada', 'matrix', 'fp8',  'native', 'nvidia-ada-whitepaper'),
  ('ada', 'matrix', 'fp4',  'absent', 'nvidia-ada-whitepaper'),
  ('ada', 'matrix', 'int8', 'native', 'nvidia-ada-whitepaper'),
  ('ada', 'matrix', 'int4', 'native', 'nvidia-ada-whitepaper'),

  ('hopper', 'matrix', 'fp64', 'native',   'nvidia-hopper-whitepaper'),
  ('hopper', 'matrix', 'fp32', 'absent',   'nvidia-hopper-whitepaper'),
  ('hopper', 'matrix', 'tf32', 'native',   'nvidia-hopper-whitepaper'),
  ('hopper', 'matrix', 'bf16', 'native',   'nvidia-hopper-whitepaper'),
  ('hopper', 'matrix', 'fp16', 'native',   'nvidia-hopper-whitepaper'),
  ('hopper', 'matrix', 'fp8',  'native',   'nvidia-hopper-whitepaper'),
  ('hopper', 'matrix', 'fp4',  'absent',   'nvidia-hopper-whitepaper'),
  ('hopper', 'matrix', 'int8', 'native',   'nvidia-hopper-whitepaper'),
  ('hopper', 'matrix', 'int4', 'emulated', 'nvidia-hopper-whitepaper'),

  ('blackwell-dc', 'matrix', 'fp64', 'native',   'nvidia-blackwell-datasheet'),
  ('blackwell-dc', 'matrix', 'fp32', 'absent',   'nvidia-blackwell-datasheet'),
  ('blackwell-dc', 'matrix', 'tf32', 'native',   'nvidia-blackwell-datasheet'),
  ('blackwell-dc', 'matrix', 'bf16', 'native',   'nvidia-blackwell-datasheet'),
  ('blackwell-dc', 'matrix', 'fp16', 'native',   'nvidia-blackwell-datasheet'),
  ('blackwell-dc', 'matrix', 'fp8',  'native',   'nvidia-blackwell-datasheet'),
  ('blackwell-dc', 'matrix', 'fp4',  'native',   'nvidia-blackwell-datasheet'),
  ('blackwell-dc', 'matrix', 'int8', 'native',   'nvidia-blackwell-datasheet'),
  ('blackwell-dc', 'matrix', 'int4', 'emulated', 'nvidia-blackwell-datasheet'),

  ('blackwell-consumer', 'matrix', 'fp64', 'absent',   'nvidia-rtx-blackwell-whitepaper'),
  ('blackwell-consumer', 'matrix', 'fp32', 'absent',   'nvidia-rtx-blackwell-whitepaper'),
  ('blackwell-consumer', 'matrix', 'tf32', 'native',   'nvidia-rtx-blackwell-whitepaper'),
  ('blackwell-consumer', 'matrix', 'bf16', 'native',   'nvidia-rtx-blackwell-whitepaper'),
  ('blackwell-consumer', 'matrix', 'fp16', 'native',   'nvidia-rtx-blackwell-whitepaper'),
  ('blackwell-consumer', 'matrix', 'fp8',  'native',   'nvidia-rtx-blackwell-whitepaper'),
  ('blackwell-consumer', 'matrix', 'fp4',  'native',   'nvidia-rtx-blackwell-whitepaper'),
  ('blackwell-consumer', 'matrix', 'int8', 'native',   'nvidia-rtx-blackwell-whitepaper'),
  ('blackwell-consumer', 'matrix', 'int4', 'emulated', 'nvidia-rtx-blackwell-whitepaper');

-- Support matrix, op_class 'vector' = CUDA cores (PTX ISA):
--  fp64/fp32/fp16: native on every architecture here (FP16 arithmetic since sm_53).
--  tf32: 'emulated' everywhere (a TF32 value is an FP32 value with a shorter mantissa).
--  bf16: native from sm_80 (fma.rn.bf16x2); Volta/Turing widen to FP32 -> 'emulated'.
--  fp8:  cvt e4m3x2/e5m2x2 <-> f16x2 needs sm_89 -> 'emulated' on Ada/Hopper/Blackwell,
--        'absent' before.
--  fp4:  cvt e2m1x2 needs sm_100a/sm_120a -> 'emulated' on Blackwell only.
--  int8: dp4a (native since sm_61).   int4: unpacked to INT8 -> 'emulated'.
INSERT INTO support (arch, op_class, format, level, source) VALUES
  ('volta', 'vector', 'fp64', 'native',   'nvidia-ptx-isa'),
  ('volta', 'vector', 'fp32', 'native',   'nvidia-ptx-isa'),
  ('volta', 'vector', 'tf32', 'emulated', 'nvidia-ptx-isa'),
  ('volta', 'vector', 'bf16', 'emulated', 'nvidia-ptx-isa'),
  ('volta', 'vector', 'fp16', 'native',   'nvidia-ptx-isa'),
  ('volta', 'vector', 'fp8',  'absent',   'nvidia-ptx-isa'),
  ('volta', 'vector', 'fp4',  'absent',   'nvidia-ptx-isa'),
  ('volta', 'vector', 'int8', 'native',   'nvidia-ptx-isa'),
  ('volta', 'vector', 'int4', 'emulated', 'nvidia-ptx-isa'),

  ('turing', 'vector', 'fp64', 'native',   'nvidia-ptx-isa'),
  ('turing', 'vector', 'fp32', 'native',   'nvidia-ptx-isa'),
  ('turing', 'vector', 'tf32', 'emulated', 'nvidia-ptx-isa'),
  ('turing', 'vector', 'bf16', 'emulated', 'nvidia-ptx-isa'),
  ('turing', 'vector', 'fp16', 'native',   'nvidia-ptx-isa'),
  ('turing', 'vector', 'fp8',  'absent',   'nvidia-ptx-isa'),
  ('turing', 'vector', 'fp4',  'absent',   'nvidia-ptx-isa'),
  ('turing', 'vector', 'int8', 'native',   'nvidia-ptx-isa'),
  ('turing', 'vector', 'int4', 'emulated', 'nvidia-ptx-isa'),

  ('ampere-ga100', 'vector', 'fp64', 'native',   'nvidia-ptx-isa'),
  ('ampere-ga100', 'vector', 'fp32', 'native',   'nvidia-ptx-isa'),
  ('ampere-ga100', 'vector', 'tf32', 'emulated', 'nvidia-ptx-isa'),
  ('ampere-ga100', 'vector', 'bf16', 'native',   'nvidia-ptx-isa'),
  ('ampere-ga100', 'vector', 'fp16', 'native',   'nvidia-ptx-isa'),
  ('ampere-ga100', 'vector', 'fp8',  'absent',   'nvidia-ptx-isa'),
  ('ampere-ga100', 'vector', 'fp4',  'absent',   'nvidia-ptx-isa'),
  ('ampere-ga100', 'vector', 'int8', 'native',   'nvidia-ptx-isa'),
  ('ampere-ga100', 'vector', 'int4', 'emulated', 'nvidia-ptx-isa'),

  ('ampere-ga10x', 'vector', 'fp64', 'native',   'nvidia-ptx-isa'),
  ('ampere-ga10x', 'vector', 'fp32', 'native',   'nvidia-ptx-isa'),
  ('ampere-ga10x', 'vector', 'tf32', 'emulated', 'nvidia-ptx-isa'),
  ('ampere-ga10x', 'vector', 'bf16', 'native',   'nvidia-ptx-isa'),
  ('ampere-ga10x', 'vector', 'fp16', 'native',   'nvidia-ptx-isa'),
  ('ampere-ga10x', 'vector', 'fp8',  'absent',   'nvidia-ptx-isa'),
  ('ampere-ga10x', 'vector', 'fp4',  'absent',   'nvidia-ptx-isa'),
  ('ampere-ga10x', 'vector', 'int8', 'native',   'nvidia-ptx-isa'),
  ('ampere-ga10x', 'vector', 'int4', 'emulated', 'nvidia-ptx-isa'),

  ('ada', 'vector', 'fp64', 'native',   'nvidia-ptx-isa'),
  ('ada', 'vector', 'fp32', 'native',   'nvidia-ptx-isa'),
  ('ada', 'vector', 'tf32', 'emulated', 'nvidia-ptx-isa'),
  ('ada', 'vector', 'bf16', 'native',   'nvidia-ptx-isa'),
  ('ada', 'vector', 'fp16', 'native',   'nvidia-ptx-isa'),
  ('ada', 'vector', 'fp8',  'emulated', 'nvidia-ptx-isa'),
  ('ada', 'vector', 'fp4',  'absent',   'nvidia-ptx-isa'),
  ('ada', 'vector', 'int8', 'native',   'nvidia-ptx-isa'),
  ('ada', 'vector', 'int4', 'emulated', 'nvidia-ptx-isa'),

  ('hopper', 'vector', 'fp64', 'native',   'nvidia-ptx-isa'),
  ('hopper', 'vector', 'fp32', 'native',   'nvidia-ptx-isa'),
  ('hopper', 'vector', 'tf32', 'emulated', 'nvidia-ptx-isa'),
  ('hopper', 'vector', 'bf16', 'native',   'nvidia-ptx-isa'),
  ('hopper', 'vector', 'fp16', 'native',   'nvidia-ptx-isa'),
  ('hopper', 'vector', 'fp8',  'emulated', 'nvidia-ptx-isa'),
  ('hopper', 'vector', 'fp4',  'absent',   'nvidia-ptx-isa'),
  ('hopper', 'vector', 'int8', 'native',   'nvidia-ptx-isa'),
  ('hopper', 'vector', 'int4', 'emulated', 'nvidia-ptx-isa'),

  ('blackwell-dc', 'vector', 'fp64', 'native',   'nvidia-ptx-isa'),
  ('blackwell-dc', 'vector', 'fp32', 'native',   'nvidia-ptx-isa'),
  ('blackwell-dc', 'vector', 'tf32', 'emulated', 'nvidia-ptx-isa'),
  ('blackwell-dc', 'vector', 'bf16', 'native',   'nvidia-ptx-isa'),
  ('blackwell-dc', 'vector', 'fp16', 'native',   'nvidia-ptx-isa'),
  ('blackwell-dc', 'vector', 'fp8',  'emulated', 'nvidia-ptx-isa'),
  ('blackwell-dc', 'vector', 'fp4',  'emulated', 'nvidia-ptx-isa'),
  ('blackwell-dc', 'vector', 'int8', 'native',   'nvidia-ptx-isa'),
  ('blackwell-dc', 'vector', 'int4', 'emulated', 'nvidia-ptx-isa'),

  ('blackwell-consumer', 'vector', 'fp64', 'native',   'nvidia-ptx-isa'),
  ('blackwell-consumer', 'vector', 'fp32', 'native',   'nvidia-ptx-isa'),
  ('blackwell-consumer', 'vector', 'tf32', 'emulated', 'nvidia-ptx-isa'),
  ('blackwell-consumer', 'vector', 'bf16', 'native',   'nvidia-ptx-isa'),
  ('blackwell-consumer', 'vector', 'fp16', 'native',   'nvidia-ptx-isa'),
  ('blackwell-consumer', 'vector', 'fp8',  'emulated', 'nvidia-ptx-isa'),
  ('blackwell-consumer', 'vector', 'fp4',  'emulated', 'nvidia-ptx-isa'),
  ('blackwell-consumer', 'vector', 'int8', 'native',   'nvidia-ptx-isa'),
  ('blackwell-consumer', 'vector', 'int4', 'emulated', 'nvidia-ptx-isa');

-- Products. units = SMs; boost_clock_ghz = GPU boost clock.
INSERT INTO product (name, short_name, vendor, arch, segment, memory_gib, memory_bandwidth_gbs, tdp_w, units, boost_clock_ghz, source) VALUES
  -- 32 GB HBM2, 900 GB/s, 300 W; 80 SMs at 1530 MHz (Volta whitepaper, Tesla V100 column).
  ('NVIDIA Tesla V100 SXM2 32GB', 'v100-sxm2-32gb', 'NVIDIA', 'volta', 'datacenter', 32, 900, 300, 80, 1.53, 'nvidia-v100-datasheet'),
  -- 16 GB GDDR6, 70 W. Bandwidth: the datasheet prints "320+ GB/s" (256-bit x 10 Gbps = 320).
  -- 40 SMs at 1590 MHz (Turing whitepaper, Tesla T4 column).
  ('NVIDIA T4', 't4', 'NVIDIA', 'turing', 'datacenter', 16, 320, 70, 40, 1.59, 'nvidia-t4-datasheet'),
  -- 80 GB HBM2e, 2039 GB/s, 400 W; 108 SMs at 1410 MHz (A100 whitepaper).
  ('NVIDIA A100 SXM4 80GB', 'a100-sxm-80gb', 'NVIDIA', 'ampere-ga100', 'datacenter', 80, 2039, 400, 108, 1.41, 'nvidia-a100-datasheet'),
  -- 80 GB HBM2e, 1935 GB/s, 300 W; same GA100 configuration and boost clock as the SXM part.
  ('NVIDIA A100 PCIe 80GB', 'a100-pcie-80gb', 'NVIDIA', 'ampere-ga100', 'datacenter', 80, 1935, 300, 108, 1.41, 'nvidia-a100-datasheet'),
  -- 24 GB GDDR6, 600 GB/s, 150 W; 72 SMs (9216 CUDA cores); 1695 MHz boost (31.2 TFLOPS FP32 =
  -- 9216 x 2 x 1.695 GHz).
  ('NVIDIA A10', 'a10', 'NVIDIA', 'ampere-ga10x', 'datacenter', 24, 600, 150, 72, 1.695, 'nvidia-a10-datasheet'),
  -- GA102 whitepaper appendix: 82 SMs, 1695 MHz, 24 GB GDDR6X, 936 GB/s, 350 W TGP.
  ('NVIDIA GeForce RTX 3090', 'rtx-3090', 'NVIDIA', 'ampere-ga10x', 'consumer', 24, 936, 350, 82, 1.695, 'nvidia-ga102-whitepaper'),
  -- 24 GB GDDR6, 300 GB/s, 72 W. 58 SMs (7424 CUDA cores / 128), 2040 MHz boost: 7424 x 2 x 2.04 =
  -- 30.3 TFLOPS, the datasheet's FP32 figure.
  ('NVIDIA L4', 'l4', 'NVIDIA', 'ada', 'datacenter', 24, 300, 72, 58, 2.04, 'nvidia-l4-datasheet'),
  -- 48 GB GDDR6, 864 GB/s, 350 W. 142 SMs (18176 CUDA cores / 128), 2520 MHz boost:
  -- 18176 x 2 x 2.52 = 91.6 TFLOPS, the datasheet's FP32 figure.
  ('NVIDIA L40S', 'l40s', 'NVIDIA', 'ada', 'datacenter', 48, 864, 350, 142, 2.52, 'nvidia-l40s-datasheet'),
  -- Ada whitepaper appendix: 128 SMs, 2520 MHz, 24 GB GDDR6X, 1008 GB/s, 450 W TGP.
  ('NVIDIA GeForce RTX 4090', 'rtx-4090', 'NVIDIA', 'ada', 'consumer', 24, 1008, 450, 128, 2.52, 'nvidia-ada-whitepaper'),
  -- 80 GB HBM3, 3.35 TB/s, up to 700 W. 132 SMs at 1980 MHz (Hopper whitepaper: 132 x 128 x 2 x
  -- 1.98 = 66.9 TFLOPS FP32).
  ('NVIDIA H100 SXM5 80GB', 'h100-sxm', 'NVIDIA', 'hopper', 'datacenter', 80, 3350, 700, 132, 1.98, 'nvidia-h100-datasheet'),
  -- 80 GB HBM2e, 2 TB/s, 300-350 W configurable (350 stored). 114 SMs at 1755 MHz
  -- (114 x 128 x 2 x 1.755 = 51.2 TFLOPS FP32). The H100 PCIe column is from the 2022 edition of
  -- the H100 datasheet; later editions list the H100 NVL instead.
  ('NVIDIA H100 PCIe 80GB', 'h100-pcie', 'NVIDIA', 'hopper', 'datacenter', 80, 2000, 350, 114, 1.755, 'nvidia-h100-datasheet'),
  -- 141 GB HBM3e, 4.8 TB/s, up to 700 W. Same GH100 configuration as H100 SXM (132 SMs, 1980 MHz:
  -- the datasheet's compute figures are identical to H100 SXM's).
  ('NVIDIA H200 SXM 141GB', 'h200-sxm', 'NVIDIA', 'hopper', 'datacenter', 141, 4800, 700, 132, 1.98, 'nvidia-h200-datasheet'),
  -- HGX B200 per-GPU column: 180 GB HBM3e, 7.7 TB/s, configurable up to 1000 W. The datasheet
  -- gives neither SM count nor clock; 148 SMs is what the CUDA runtime reports for B200
  -- (multiProcessorCount) and is consistent with 75 TFLOPS FP32 = 148 x 128 x 2 x 1.98 GHz, but no
  -- boost clock is published, so boost_clock_ghz is left NULL. (Earlier B200 material said 192 GB
  -- and 8 TB/s; the HGX B200 figures are used.)
  ('NVIDIA B200 (HGX)', 'b200', 'NVIDIA', 'blackwell-dc', 'datacenter', 180, 7700, 1000, 148, NULL, 'nvidia-blackwell-datasheet'),
  -- RTX Blackwell whitepaper appendix: 170 SMs, 2407 MHz, 32 GB GDDR7, 1792 GB/s, 575 W TGP.
  ('NVIDIA GeForce RTX 5090', 'rtx-5090', 'NVIDIA', 'blackwell-consumer', 'consumer', 32, 1792, 575, 170, 2.407, 'nvidia-rtx-blackwell-whitepaper');

-- Peaks (TFLOPS / TOPS, dense, boost clock).
INSERT INTO peak (product, format, dense, op_class, source) VALUES
  -- V100 SXM2: 7.8 FP64, 15.7 FP32, 125 "deep learning" (FP16 Tensor, FP32 accumulate).
  -- No INT8 Tensor Cores on Volta; dp4a rate not published -> no int8 row.
  ('NVIDIA Tesla V100 SXM2 32GB', 'fp64', 7.8,   'vector', 'nvidia-v100-datasheet'),
  ('NVIDIA Tesla V100 SXM2 32GB', 'fp32', 15.7,  'vector', 'nvidia-v100-datasheet'),
  ('NVIDIA Tesla V100 SXM2 32GB', 'fp16', 125,   'matrix', 'nvidia-v100-datasheet'),

  -- T4 (no sparsity on Turing): 8.1 FP32, 65 FP16/FP32 mixed, 130 INT8, 260 INT4.
  -- FP64 not in the datasheet: derived 40 SMs x 2 x 2 x 1.59 GHz = 0.254 TFLOPS (1/32 of FP32).
  ('NVIDIA T4', 'fp64', 0.254, 'vector', 'nvidia-cuda-programming-guide'),
  ('NVIDIA T4', 'fp32', 8.1,   'vector', 'nvidia-t4-datasheet'),
  ('NVIDIA T4', 'fp16', 65,    'matrix', 'nvidia-t4-datasheet'),
  ('NVIDIA T4', 'int8', 130,   'matrix', 'nvidia-t4-datasheet'),
  ('NVIDIA T4', 'int4', 260,   'matrix', 'nvidia-t4-datasheet'),

  -- A100 SXM4 80GB (datasheet, dense column): FP64 Tensor 19.5 (FP64 CUDA cores 9.7), FP32 19.5,
  -- TF32 156, BF16 312, FP16 312, INT8 624 (the 312/624/624/1248 "*" figures are sparse).
  -- INT4 1248 dense from the A100 whitepaper (the 80GB datasheet no longer lists INT4).
  -- FP16/BF16 on CUDA cores: 78 / 39 (whitepaper).
  ('NVIDIA A100 SXM4 80GB', 'fp64', 19.5, 'matrix', 'nvidia-a100-datasheet'),
  ('NVIDIA A100 SXM4 80GB', 'fp32', 19.5, 'vector', 'nvidia-a100-datasheet'),
  ('NVIDIA A100 SXM4 80GB', 'tf32', 156,  'matrix', 'nvidia-a100-datasheet'),
  ('NVIDIA A100 SXM4 80GB', 'bf16', 312,  'matrix', 'nvidia-a100-datasheet'),
  ('NVIDIA A100 SXM4 80GB', 'fp16', 312,  'matrix', 'nvidia-a100-datasheet'),
  ('NVIDIA A100 SXM4 80GB', 'int8', 624,  'matrix', 'nvidia-a100-datasheet'),
  ('NVIDIA A100 SXM4 80GB', 'int4', 1248, 'matrix', 'nvidia-ampere-whitepaper'),

  -- A100 PCIe 80GB: the datasheet prints the same compute figures as the SXM part.
  ('NVIDIA A100 PCIe 80GB', 'fp64', 19.5, 'matrix', 'nvidia-a100-datasheet'),
  ('NVIDIA A100 PCIe 80GB', 'fp32', 19.5, 'vector', 'nvidia-a100-datasheet'),
  ('NVIDIA A100 PCIe 80GB', 'tf32', 156,  'matrix', 'nvidia-a100-datasheet'),
  ('NVIDIA A100 PCIe 80GB', 'bf16', 312,  'matrix', 'nvidia-a100-datasheet'),
  ('NVIDIA A100 PCIe 80GB', 'fp16', 312,  'matrix', 'nvidia-a100-datasheet'),
  ('NVIDIA A100 PCIe 80GB', 'int8', 624,  'matrix', 'nvidia-a100-datasheet'),
  ('NVIDIA A100 PCIe 80GB', 'int4', 1248, 'matrix', 'nvidia-ampere-whitepaper'),

  -- A10 (datasheet, dense column; sparse: 125/250/250/500/1000): FP32 31.2, TF32 62.5, BF16 125,
  -- FP16 125, INT8 250, INT4 500. FP64 derived: 72 x 2 x 2 x 1.695 GHz = 0.488.
  ('NVIDIA A10', 'fp64', 0.488, 'vector', 'nvidia-cuda-programming-guide'),
  ('NVIDIA A10', 'fp32', 31.2,  'vector', 'nvidia-a10-datasheet'),
  ('NVIDIA A10', 'tf32', 62.5,  'matrix', 'nvidia-a10-datasheet'),
  ('NVIDIA A10', 'bf16', 125,   'matrix', 'nvidia-a10-datasheet'),
  ('NVIDIA A10', 'fp16', 125,   'matrix', 'nvidia-a10-datasheet'),
  ('NVIDIA A10', 'int8', 250,   'matrix', 'nvidia-a10-datasheet'),
  ('NVIDIA A10', 'int4', 500,   'matrix', 'nvidia-a10-datasheet'),

  -- RTX 3090 (GA102 whitepaper, dense/sparse): FP32 35.6; TF32 35.6/71; BF16 71/142;
  -- FP16 with FP32 accumulate 71/142 (with FP16 accumulate 142/284); INT8 284/568; INT4 568/1136.
  -- FP64 derived: 82 x 2 x 2 x 1.695 GHz = 0.556.
  ('NVIDIA GeForce RTX 3090', 'fp64', 0.556, 'vector', 'nvidia-cuda-programming-guide'),
  ('NVIDIA GeForce RTX 3090', 'fp32', 35.6,  'vector', 'nvidia-ga102-whitepaper'),
  ('NVIDIA GeForce RTX 3090', 'tf32', 35.6,  'matrix', 'nvidia-ga102-whitepaper'),
  ('NVIDIA GeForce RTX 3090', 'bf16', 71,    'matrix', 'nvidia-ga102-whitepaper'),
  ('NVIDIA GeForce RTX 3090', 'fp16', 71,    'matrix', 'nvidia-ga102-whitepaper'),
  ('NVIDIA GeForce RTX 3090', 'int8', 284,   'matrix', 'nvidia-ga102-whitepaper'),
  ('NVIDIA GeForce RTX 3090', 'int4', 568,   'matrix', 'nvidia-ga102-whitepaper'),

  -- L4 (datasheet prints only sparse Tensor figures, halved here): TF32 120* -> 60,
  -- BF16 242* -> 121, FP16 242* -> 121, FP8 485* -> 242.5, INT8 485* -> 242.5. FP32 30.3.
  -- INT4 is not in the L4 datasheet -> no row. FP64 derived: 58 x 2 x 2 x 2.04 GHz = 0.473.
  ('NVIDIA L4', 'fp64', 0.473, 'vector', 'nvidia-cuda-programming-guide'),
  ('NVIDIA L4', 'fp32', 30.3,  'vector', 'nvidia-l4-datasheet'),
  ('NVIDIA L4', 'tf32', 60,    'matrix', 'nvidia-l4-datasheet'),
  ('NVIDIA L4', 'bf16', 121,   'matrix', 'nvidia-l4-datasheet'),
  ('NVIDIA L4', 'fp16', 121,   'matrix', 'nvidia-l4-datasheet'),
  ('NVIDIA L4', 'fp8',  242.5, 'matrix', 'nvidia-l4-datasheet'),
  ('NVIDIA L4', 'int8', 242.5, 'matrix', 'nvidia-l4-datasheet'),

  -- L40S (datasheet prints dense | sparse*): FP32 91.6, TF32 183 | 366*, BF16 362.05 | 733*,
  -- FP16 362.05 | 733*, FP8 733 | 1466*, INT8 733 | 1466*. The datasheet shows INT4 with the same
  -- figure as INT8, although Ada runs INT4 at twice the INT8 rate (RTX 4090, L40): the figures
  -- disagree, so no int4 row. FP64 derived: 142 x 2 x 2 x 2.52 GHz = 1.431.
  ('NVIDIA L40S', 'fp64', 1.431,  'vector', 'nvidia-cuda-programming-guide'),
  ('NVIDIA L40S', 'fp32', 91.6,   'vector', 'nvidia-l40s-datasheet'),
  ('NVIDIA L40S', 'tf32', 183,    'matrix', 'nvidia-l40s-datasheet'),
  ('NVIDIA L40S', 'bf16', 362.05, 'matrix', 'nvidia-l40s-datasheet'),
  ('NVIDIA L40S', 'fp16', 362.05, 'matrix', 'nvidia-l40s-datasheet'),
  ('NVIDIA L40S', 'fp8',  733,    'matrix', 'nvidia-l40s-datasheet'),
  ('NVIDIA L40S', 'int8', 733,    'matrix', 'nvidia-l40s-datasheet'),

  -- RTX 4090 (Ada whitepaper, dense/sparse): FP32 82.6; TF32 82.6/165.2; BF16 165.2/330.4;
  -- FP16 with FP32 accumulate 165.2/330.4 (FP16 accumulate 330.3/660.6); FP8 with FP32 accumulate
  -- 330.3/660.6 (FP16 accumulate 660.6/1321.2); INT8 660.6/1321.2; INT4 1321.2/2642.4.
  -- FP64 derived: 128 x 2 x 2 x 2.52 GHz = 1.290.
  ('NVIDIA GeForce RTX 4090', 'fp64', 1.290,  'vector', 'nvidia-cuda-programming-guide'),
  ('NVIDIA GeForce RTX 4090', 'fp32', 82.6,   'vector', 'nvidia-ada-whitepaper'),
  ('NVIDIA GeForce RTX 4090', 'tf32', 82.6,   'matrix', 'nvidia-ada-whitepaper'),
  ('NVIDIA GeForce RTX 4090', 'bf16', 165.2,  'matrix', 'nvidia-ada-whitepaper'),
  ('NVIDIA GeForce RTX 4090', 'fp16', 165.2,  'matrix', 'nvidia-ada-whitepaper'),
  ('NVIDIA GeForce RTX 4090', 'fp8',  330.3,  'matrix', 'nvidia-ada-whitepaper'),
  ('NVIDIA GeForce RTX 4090', 'int8', 660.6,  'matrix', 'nvidia-ada-whitepaper'),
  ('NVIDIA GeForce RTX 4090', 'int4', 1321.2, 'matrix', 'nvidia-ada-whitepaper'),

  -- H100 SXM (datasheet): FP64 34 (CUDA cores), FP64 Tensor 67, FP32 67; sparse-only Tensor
  -- figures halved: TF32 989* -> 494.5, BF16 1979* -> 989.5, FP16 1979* -> 989.5,
  -- FP8 3958* -> 1979, INT8 3958* -> 1979 TOPS. No INT4 on Hopper.
  ('NVIDIA H100 SXM5 80GB', 'fp64', 67,     'matrix', 'nvidia-h100-datasheet'),
  ('NVIDIA H100 SXM5 80GB', 'fp32', 67,     'vector', 'nvidia-h100-datasheet'),
  ('NVIDIA H100 SXM5 80GB', 'tf32', 494.5,  'matrix', 'nvidia-h100-datasheet'),
  ('NVIDIA H100 SXM5 80GB', 'bf16', 989.5,  'matrix', 'nvidia-h100-datasheet'),
  ('NVIDIA H100 SXM5 80GB', 'fp16', 989.5,  'matrix', 'nvidia-h100-datasheet'),
  ('NVIDIA H100 SXM5 80GB', 'fp8',  1979,   'matrix', 'nvidia-h100-datasheet'),
  ('NVIDIA H100 SXM5 80GB', 'int8', 1979,   'matrix', 'nvidia-h100-datasheet'),

  -- H100 PCIe (2022 datasheet): FP64 26 (CUDA cores), FP64 Tensor 51, FP32 51; halved from sparse:
  -- TF32 756* -> 378, BF16 1513* -> 756.5, FP16 1513* -> 756.5, FP8 3026* -> 1513, INT8 3026* -> 1513.
  ('NVIDIA H100 PCIe 80GB', 'fp64', 51,     'matrix', 'nvidia-h100-datasheet'),
  ('NVIDIA H100 PCIe 80GB', 'fp32', 51,     'vector', 'nvidia-h100-datasheet'),
  ('NVIDIA H100 PCIe 80GB', 'tf32', 378,    'matrix', 'nvidia-h100-datasheet'),
  ('NVIDIA H100 PCIe 80GB', 'bf16', 756.5,  'matrix', 'nvidia-h100-datasheet'),
  ('NVIDIA H100 PCIe 80GB', 'fp16', 756.5,  'matrix', 'nvidia-h100-datasheet'),
  ('NVIDIA H100 PCIe 80GB', 'fp8',  1513,   'matrix', 'nvidia-h100-datasheet'),
  ('NVIDIA H100 PCIe 80GB', 'int8', 1513,   'matrix', 'nvidia-h100-datasheet'),

  -- H200 SXM (datasheet): same figures as H100 SXM; FP64 34 on CUDA cores, FP64 Tensor 67,
  -- FP32 67; halved from sparse: TF32 989* -> 494.5, BF16/FP16 1979* -> 989.5, FP8/INT8 3958* -> 1979.
  ('NVIDIA H200 SXM 141GB', 'fp64', 67,     'matrix', 'nvidia-h200-datasheet'),
  ('NVIDIA H200 SXM 141GB', 'fp32', 67,     'vector', 'nvidia-h200-datasheet'),
  ('NVIDIA H200 SXM 141GB', 'tf32', 494.5,  'matrix', 'nvidia-h200-datasheet'),
  ('NVIDIA H200 SXM 141GB', 'bf16', 989.5,  'matrix', 'nvidia-h200-datasheet'),
  ('NVIDIA H200 SXM 141GB', 'fp16', 989.5,  'matrix', 'nvidia-h200-datasheet'),
  ('NVIDIA H200 SXM 141GB', 'fp8',  1979,   'matrix', 'nvidia-h200-datasheet'),
  ('NVIDIA H200 SXM 141GB', 'int8', 1979,   'matrix', 'nvidia-h200-datasheet'),

  -- B200, HGX B200 per-GPU column of the Blackwell datasheet; its Tensor Core figures are sparse
  -- (except FP64) and are halved: FP4 18 PF -> 9000, FP8/FP6 9 PF -> 4500, INT8 9 POPS -> 4500,
  -- FP16/BF16 4.5 PF -> 2250, TF32 2.2 PF -> 1100 (2.2 is printed rounded). FP64 and FP64 Tensor
  -- Core 37 (same figure for both), FP32 75. Earlier B200 material printed FP64 40 / FP32 80 for
  -- the same GPU; the HGX B200 datasheet figures are used.
  ('NVIDIA B200 (HGX)', 'fp64', 37,   'matrix', 'nvidia-blackwell-datasheet'),
  ('NVIDIA B200 (HGX)', 'fp32', 75,   'vector', 'nvidia-blackwell-datasheet'),
  ('NVIDIA B200 (HGX)', 'tf32', 1100, 'matrix', 'nvidia-blackwell-datasheet'),
  ('NVIDIA B200 (HGX)', 'bf16', 2250, 'matrix', 'nvidia-blackwell-datasheet'),
  ('NVIDIA B200 (HGX)', 'fp16', 2250, 'matrix', 'nvidia-blackwell-datasheet'),
  ('NVIDIA B200 (HGX)', 'fp8',  4500, 'matrix', 'nvidia-blackwell-datasheet'),
  ('NVIDIA B200 (HGX)', 'fp4',  9000, 'matrix', 'nvidia-blackwell-datasheet'),
  ('NVIDIA B200 (HGX)', 'int8', 4500, 'matrix', 'nvidia-blackwell-datasheet'),

  -- RTX 5090 (RTX Blackwell whitepaper appendix, dense/sparse): FP32 104.8; TF32 104.8/209.5;
  -- BF16 209.5/419; FP16 with FP32 accumulate 209.5/419 (FP16 accumulate 419/838); FP8 with FP32
  -- accumulate 419/838 (FP16 accumulate 838/1676); FP4 with FP32 accumulate 1676/3352 (the
  -- "3352 AI TOPS"); INT8 838/1676. No INT4 rate is published -> no int4 row.
  -- FP64 derived: 170 x 2 x 2 x 2.407 GHz = 1.637.
  ('NVIDIA GeForce RTX 5090', 'fp64', 1.637, 'vector', 'nvidia-cuda-programming-guide'),
  ('NVIDIA GeForce RTX 5090', 'fp32', 104.8, 'vector', 'nvidia-rtx-blackwell-whitepaper'),
  ('NVIDIA GeForce RTX 5090', 'tf32', 104.8, 'matrix', 'nvidia-rtx-blackwell-whitepaper'),
  ('NVIDIA GeForce RTX 5090', 'bf16', 209.5, 'matrix', 'nvidia-rtx-blackwell-whitepaper'),
  ('NVIDIA GeForce RTX 5090', 'fp16', 209.5, 'matrix', 'nvidia-rtx-blackwell-whitepaper'),
  ('NVIDIA GeForce RTX 5090', 'fp8',  419,   'matrix', 'nvidia-rtx-blackwell-whitepaper'),
  ('NVIDIA GeForce RTX 5090', 'fp4',  1676,  'matrix', 'nvidia-rtx-blackwell-whitepaper'),
  ('NVIDIA GeForce RTX 5090', 'int8', 838,   'matrix', 'nvidia-rtx-blackwell-whitepaper');
