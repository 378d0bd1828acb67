import marimo

__generated_with = "0.25.2"
app = marimo.App(width="full")


@app.cell
def _():
    import marimo as mo

    mo.md(
        """
        # Your first kernel, in marimo

        `gpulab.compile` wraps a typed Python function in a primitive (here a **map**,
        `out[i] = f(x[i], y[i])`), compiles it for a GPU (`sm_90`: no GPU is needed to
        compile) and shows the build: your Python, the generated CUDA C++, the PTX and
        the SASS the GPU runs, each Python line coloured where it lands. Hover the
        `return` line to light its SASS instructions. The build bar rebuilds for
        another target, or with LTO, FMA or the bounds check flipped.
        """
    )
    return


@app.cell
def _():
    import gpulab

    a = gpulab.f32(2.5)

    def saxpy(x: gpulab.f32, y: gpulab.f32) -> gpulab.f32:
        return a * x + y

    build = gpulab.compile("map", saxpy, target="sm_90")
    build
    return build, gpulab


@app.cell
def _(build):
    build.line_costs()
    return


if __name__ == "__main__":
    app.run()
