"""A stand-in pandas for the capture tests (see README.md): the DataFrame triton.testing prints."""


class Series(list):
    def isnull(self):
        return Series(v is None for v in self)

    def all(self):
        return all(self)

    def astype(self, ty):
        return Series(ty(v) for v in self)

    def __sub__(self, other):
        return Series(a - b for a, b in zip(self, other))


class _Loc:
    def __init__(self, df):
        self.df = df

    def __setitem__(self, index, row):
        self.df.rows.append(list(row))


class _Columns(list):
    def tolist(self):
        return list(self)


class DataFrame:
    def __init__(self, columns=()):
        self.columns = _Columns(columns)
        self.rows = []
        self.loc = _Loc(self)

    def __len__(self):
        return len(self.rows)

    @property
    def shape(self):
        return (len(self.rows), len(self.columns))

    def __getitem__(self, key):
        if isinstance(key, list):
            out = DataFrame(key)
            idx = [self.columns.index(k) for k in key]
            out.rows = [[r[i] for i in idx] for r in self.rows]
            return out
        i = self.columns.index(key)
        return Series(r[i] for r in self.rows)

    def __setitem__(self, key, values):
        self.columns.append(key)
        for r, v in zip(self.rows, values):
            r.append(v)

    def to_string(self):
        lines = ["  ".join(str(c) for c in self.columns)]
        lines += ["  ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in r) for r in self.rows]
        return "\n".join(lines)

    def to_csv(self, path, **kwargs):
        with open(path, "w") as f:
            f.write(",".join(self.columns) + "\n")
            f.writelines(",".join(str(v) for v in r) + "\n" for r in self.rows)
