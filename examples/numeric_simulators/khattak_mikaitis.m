% The MATLAB tensor-core models of Khattak and Mikaitis ("Accurate models of NVIDIA tensor
% cores", arXiv:2512.07004; github.com/north-numerical-computing/MATLAB-tensor-core, BSD-2-Clause)
% answering a file of line-protocol requests (docs/numerics.md, "Numeric simulators"), for GNU
% Octave; khattak_mikaitis.py speaks the protocol and runs this once per batch. Their repository
% is not part of this project: pass its models/ folder.
%
%   octave-cli -q khattak_mikaitis.m MODELS_DIR MODEL REQUESTS REPLIES
%
% Each request `ip IN ACC A B C` (raw codes in hexadecimal) is decoded to doubles, one inner product
% is computed as the model's GEMM of a 1 x K row by a K x 1 column plus c, and the result is encoded
% back to the accumulator's code: `d HEX`. Whatever the models print is captured (evalc).

args = argv();
if numel(args) < 4
  fprintf(2, 'usage: octave-cli -q khattak_mikaitis.m MODELS_DIR MODEL REQUESTS REPLIES\n');
  exit(2);
end
models = args{1};
model = args{2};
addpath(models);
addpath(fullfile(models, 'tools'));

% (exponent bits, fraction bits, bias, bits below the fields, special values) of each format
function f = fmt_fields(name)
  switch name
    case 'f16',  f = struct('e', 5, 'm', 10, 'bias', 15,  'shift', 0,  'spec', 'ieee');
    case 'bf16', f = struct('e', 8, 'm', 7,  'bias', 127, 'shift', 0,  'spec', 'ieee');
    case 'tf32', f = struct('e', 8, 'm', 10, 'bias', 127, 'shift', 13, 'spec', 'ieee');
    case 'f32',  f = struct('e', 8, 'm', 23, 'bias', 127, 'shift', 0,  'spec', 'ieee');
    case 'e4m3', f = struct('e', 4, 'm', 3,  'bias', 7,   'shift', 0,  'spec', 'fn');
    case 'e5m2', f = struct('e', 5, 'm', 2,  'bias', 15,  'shift', 0,  'spec', 'ieee');
    otherwise, error('unknown format %s', name);
  end
end

% the values of raw codes (IEEE 754 / OCP MX fields), element by element
function v = decode_code(code, name)
  f = fmt_fields(name);
  code = floor(code / 2^f.shift);
  frac = mod(code, 2^f.m);
  ef = mod(floor(code / 2^f.m), 2^f.e);
  s = mod(floor(code / 2^(f.m + f.e)), 2);
  top = 2^f.e - 1;
  v = (1 + frac / 2^f.m) .* 2.^(ef - f.bias);
  v(ef == 0) = frac(ef == 0) * 2^(1 - f.bias - f.m);
  if strcmp(f.spec, 'ieee')
    v(ef == top & frac == 0) = Inf;
    v(ef == top & frac ~= 0) = NaN;
  else
    v(ef == top & frac == 2^f.m - 1) = NaN;
  end
  v(s == 1) = -v(s == 1);
end

% the code of a value exact in f32 or f16 (NaN: the canonical NaN 0x7FFFFFFF / 0x7FFF); an error
% when the value is not one of the format's
function code = encode_value(v, name)
  f = fmt_fields(name);
  if isnan(v)
    code = 2^(f.e + f.m) - 1;
    return;
  end
  s = (v < 0) || (v == 0 && 1 / v < 0);
  a = abs(v);
  if isinf(a)
    code = (2^f.e - 1) * 2^f.m;
  elseif a == 0
    code = 0;
  else
    [~, e2] = log2(a);
    ex = e2 - 1;
    if ex + f.bias >= 2^f.e - 1
      error('the model returned %.17g, beyond the largest finite %s', v, name);
    elseif ex < 1 - f.bias
      code = round(a / 2^(1 - f.bias - f.m));
    else
      code = (ex + f.bias) * 2^f.m + round((a / 2^ex - 1) * 2^f.m);
    end
  end
  code = code + s * 2^(f.e + f.m);
  if decode_code(code, name) ~= v
    error('the model returned %.17g, which is not a %s value', v, name);
  end
end

informats = struct('f16', 'fp16', 'bf16', 'bf16', 'tf32', 'tf32', 'e4m3', 'fp8-e4m3', 'e5m2', 'fp8-e5m2');
outformats = struct('f32', 'fp32', 'f16', 'fp16');

requests = fopen(args{3}, 'r');
replies = fopen(args{4}, 'w');
while true
  line = fgetl(requests);
  if ~ischar(line), break; end
  words = strsplit(strtrim(line), ' ');
  if strcmp(words{1}, 'ip') && numel(words) == 6
    fi = words{2}; fa = words{3};
    a = decode_code(hex2dec(strsplit(words{4}, ','))', fi);
    b = decode_code(hex2dec(strsplit(words{5}, ','))', fi);
    c = decode_code(hex2dec(words{6}), fa);
    try
      evalc('d = feval(model, 1, a, b.'', 1, c, informats.(fi), outformats.(fa));');
      fprintf(replies, 'd %x\n', encode_value(d, fa));
    catch err
      fprintf(replies, 'error %s\n', strrep(err.message, sprintf('\n'), ' '));
    end
  else
    fprintf(replies, 'error cannot parse a request\n');
  end
end
fclose(requests);
fclose(replies);
